// Package e2e holds the end-to-end tests: journeys in headless Chromium and
// the service as a process (start, stop, restart, crash), run from the
// repository's root. It holds no code the service uses. Journeys run in
// parallel (two at a time on two cores: go test's -parallel): each has its
// own instance, database and browser; the process tests run alone.
package e2e
