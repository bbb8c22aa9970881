package server

import (
	"math"
	"runtime/debug"
	"sync"

	"stencil/auth"
	"stencil/engine"
)

// runMemoryStep is how finely the soft memory limit follows the memory
// that routes' runs hold: ordinary runs hold less than one step, and never
// move it.
const runMemoryStep = 32 << 20

// memoryLimit keeps the runtime's soft memory limit (GOMEMLIMIT), when one
// is set, at its value at start raised by the argon2id hashes in flight
// and by the whole runMemoryStep steps that routes' runs hold of their
// shared memory: the limit keeps ordinary work small, and the collector
// should not run without pause while bounded work it cannot shrink is
// under way. Runs holding less than a step (a load of small runs, a chunk
// each) leave the limit where it is, so the service's peak does not follow
// how many are in flight (docs/performance.md). When the last hash in
// flight ends, its memory goes back to the system at once rather than over
// the next minutes, so that the service stays as small as its requests
// between sign-ins.
type memoryLimit struct {
	base   int64
	mu     sync.Mutex // apply, one at a time
	hasher *auth.Hasher
	runs   *engine.Budget
}

// followMemory makes the soft memory limit follow hasher and runs.
func followMemory(hasher *auth.Hasher, runs *engine.Budget) {
	m := &memoryLimit{base: debug.SetMemoryLimit(-1), hasher: hasher, runs: runs}
	hasher.Watch(func(inFlight int64, ended bool) {
		m.apply()
		if inFlight == 0 && ended {
			go debug.FreeOSMemory()
		}
	})
	runs.Watch(runMemoryStep, m.apply)
}

func (m *memoryLimit) apply() {
	if m.base <= 0 || m.base == math.MaxInt64 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	held := m.runs.Held() / runMemoryStep * runMemoryStep
	debug.SetMemoryLimit(m.base + m.hasher.InFlight()*int64(m.hasher.Params.Memory)*1024 + held)
}
