// Package e2e holds the end-to-end tests: journeys in headless Chromium and
// the service as a process (start, stop, restart, crash), run from the
// repository's root. It holds no code the service uses.
package e2e
