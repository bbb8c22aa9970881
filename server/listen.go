package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"syscall"
	"time"

	"stencil/config"
	"stencil/handlers"
)

// raiseFileLimit lifts the soft limit on open files to the hard limit and
// returns the limit in force.
func raiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}

// connectionCap is how many client connections may be open at once with
// limit file descriptors: a reserve stays for the database pool, the log
// and the files the server opens.
func connectionCap(limit uint64, dbConns int) int {
	reserve := uint64(dbConns + 64)
	if limit <= reserve+16 {
		return 16
	}
	return int(min(limit-reserve, 100_000))
}

// steadyListener keeps a server accepting through hard times: at most cap
// connections are open at once (the rest wait in the kernel's backlog), and
// when accept fails for want of descriptors or memory it backs off and tries
// again instead of returning an error that would stop the server.
type steadyListener struct {
	net.Listener
	slots chan struct{}
	log   *slog.Logger
}

func newSteadyListener(ln net.Listener, cap int, log *slog.Logger) *steadyListener {
	return &steadyListener{Listener: ln, slots: make(chan struct{}, cap), log: log}
}

// Accept waits for a free slot, then for a connection.
func (l *steadyListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	backoff := 5 * time.Millisecond
	for {
		conn, err := l.Listener.Accept()
		if err == nil {
			return &slotConn{Conn: conn, release: func() { <-l.slots }}, nil
		}
		if !transientAcceptError(err) {
			<-l.slots
			return nil, err
		}
		l.log.Warn("accept failed; retrying", "err", err, "in", backoff)
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// transientAcceptError reports errors that pass: out of descriptors or
// buffers, or a client that gave up before accept.
func transientAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// slotConn gives its listener slot back when closed.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// sideListeners starts, when configured, the metrics listener (METRICS_ADDR,
// no authentication: keep it on a private network) and the profiler
// (DEBUG_ADDR, loopback only). Both stop when ctx ends.
func sideListeners(ctx context.Context, cfg config.Config, h *handlers.Handlers, log *slog.Logger) error {
	serveOn := func(addr, what string, handler http.Handler) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		go func() { <-ctx.Done(); _ = srv.Close() }()
		log.Info("serving "+what, "addr", ln.Addr().String())
		return nil
	}
	if cfg.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", h.MetricsHandler())
		if err := serveOn(cfg.MetricsAddr, "metrics", mux); err != nil {
			return err
		}
	}
	if cfg.DebugAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		if err := serveOn(cfg.DebugAddr, "profiler", mux); err != nil {
			return err
		}
	}
	return nil
}
