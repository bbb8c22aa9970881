// Command stencil serves Stencil: route templates and per-project vaults.
//
// Usage: stencil [serve | migrate | vault rotate | openapi | backup <file> | restore <file>]
//
//	stencil project export|plan|apply … (see docs/projects.md)
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"stencil/cli"
	"stencil/server"
)

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		// A soft limit makes the collector work before the heap doubles:
		// bursts of large answers stay near it instead of at twice the live
		// heap. GOMEMLIMIT overrides it.
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	if os.Getenv("GOGC") == "" && debug.SetMemoryLimit(-1) < math.MaxInt64 {
		// The limit alone says when the collector runs: the heap grows to
		// it, whatever the live heap is, so the service's peak is its
		// memory budget and not a multiple of the data it holds (a route
		// table of 20,000 routes, docs/performance.md). Runs allocate most
		// of what they read, and collecting only near the limit is fewer
		// collections than any GOGC. GOGC, or GOMEMLIMIT=off, restores the
		// collector's pacing by the live heap.
		debug.SetGCPercent(-1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) == 2 && cli.IsHelp(os.Args[1]) {
		fmt.Fprint(os.Stdout, server.Usage+cli.Usage)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "project" {
		// A client of a running service: it neither reads the service's
		// configuration nor touches its database.
		code := cli.Project(ctx, cli.Env{Args: os.Args[2:], Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
			Terminal: cli.IsTerminal(os.Stdout)})
		stop()
		os.Exit(code)
	}
	if err := server.Run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// defaultMemoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT
// says otherwise.
const defaultMemoryLimit = 96 << 20
