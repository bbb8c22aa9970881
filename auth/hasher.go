package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Hasher runs argon2id hashes and checks in bounded slots (one per core,
// at least two; docs/security.md): each holds Params.Memory while it runs
// and keeps its threads busy, so that a burst of sign-ins waits its turn
// instead of exhausting memory.
type Hasher struct {
	Params PasswordParams
	// Wait is how long a hash waits for a free slot before ErrBusy.
	Wait     time.Duration
	slots    chan struct{}
	inFlight atomic.Int64
	watch    func(inFlight int64, ended bool)
	decoy    struct { // a hash under Params, for accounts that do not exist
		once sync.Once
		hash string
	}
}

// ErrBusy is a hash that found no free slot in time.
var ErrBusy = errors.New("too many sign-ins at once; try again in a moment")

// NewHasher is a hasher of slots slots under params.
func NewHasher(params PasswordParams, slots int, wait time.Duration) *Hasher {
	return &Hasher{Params: params, Wait: wait, slots: make(chan struct{}, slots)}
}

// Watch has fn told how many hashes are in flight each time one starts or
// ends (ended). It is set before the first hash.
func (h *Hasher) Watch(fn func(inFlight int64, ended bool)) { h.watch = fn }

// InFlight is how many hashes run now.
func (h *Hasher) InFlight() int64 { return h.inFlight.Load() }

// Do runs fn, a hash or a check, in a slot: it waits up to Wait (or until
// ctx ends) for one, and answers ErrBusy when none frees.
func (h *Hasher) Do(ctx context.Context, fn func()) error {
	ctx, cancel := context.WithTimeout(ctx, h.Wait)
	defer cancel()
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return ErrBusy
	}
	defer func() { <-h.slots }()
	h.tell(1)
	defer h.tell(-1)
	fn()
	return nil
}

func (h *Hasher) tell(delta int64) {
	n := h.inFlight.Add(delta)
	if h.watch != nil {
		h.watch(n, delta < 0)
	}
}

// Hash hashes password in a slot.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	var hash string
	err := h.Do(ctx, func() { hash = HashPassword(password, h.Params) })
	return hash, err
}

// Decoy is a hash to check a password against when the account does not
// exist, so that a wrong name takes as long as a wrong password. It is
// made once, by the first caller (in a slot: call it inside Do).
func (h *Hasher) Decoy() string {
	h.decoy.once.Do(func() { h.decoy.hash = HashPassword("decoy", h.Params) })
	return h.decoy.hash
}
