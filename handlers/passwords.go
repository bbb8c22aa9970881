package handlers

import (
	"context"
	"math"
	"runtime/debug"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/auth"
	"stencil/store"
)

// defaultHashWait is how long a request waits for a free hashing slot
// before it is answered 503.
const defaultHashWait = 5 * time.Second

var errHashingBusy = fiber.NewError(fiber.StatusServiceUnavailable, "too many sign-ins at once; try again in a moment")

// hashing runs fn — an argon2id hash or check — in one of the bounded slots
// (one per core, at least two; docs/security.md allows two per core): each holds
// 64 MiB while it runs and keeps two cores busy, so a burst of sign-ins waits
// its turn instead of exhausting memory.
func (h *Handlers) hashing(c *fiber.Ctx, fn func()) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), h.hash.wait)
	defer cancel()
	select {
	case h.hash.slots <- struct{}{}:
	case <-ctx.Done():
		c.Set(fiber.HeaderRetryAfter, "1")
		return errHashingBusy
	}
	defer func() { <-h.hash.slots }()
	h.makeRoomForHash(1)
	defer h.makeRoomForHash(-1)
	fn()
	return nil
}

// makeRoomForHash raises the runtime's soft memory limit, when one is set,
// by the memory of each hash in flight (and lowers it again after): the
// limit keeps ordinary bursts small, and hashes, bounded by their slots,
// should not make the collector run without pause. When the last hash in
// flight ends, its memory goes back to the system at once rather than over
// the next minutes, so that the service stays as small as its requests
// between sign-ins.
func (h *Handlers) makeRoomForHash(delta int64) {
	n := h.hash.inFlight.Add(delta)
	h.applyMemoryLimit()
	if n == 0 && delta < 0 {
		go debug.FreeOSMemory()
	}
}

// runMemoryStep is how finely the soft memory limit follows the memory
// that routes' runs hold: ordinary runs hold less than one step, and never
// move it.
const runMemoryStep = 32 << 20

// applyMemoryLimit sets the runtime's soft memory limit, when one is set,
// to its value at start, raised by the hashes in flight and by the whole
// runMemoryStep steps that runs hold of their shared memory: the limit
// keeps ordinary work small, and the collector should not run without
// pause while bounded work it cannot shrink is under way. Runs holding
// less than a step (a load of small runs, a chunk each) leave the limit
// where it is, so the service's peak does not follow how many are in
// flight (docs/performance.md).
func (h *Handlers) applyMemoryLimit() {
	base := h.hash.memoryLimit
	if base <= 0 || base == math.MaxInt64 {
		return
	}
	h.hash.memoryLimitMu.Lock()
	defer h.hash.memoryLimitMu.Unlock()
	runs := int64(0)
	if h.runs.Limits.Shared != nil {
		runs = h.runs.Limits.Shared.Held() / runMemoryStep * runMemoryStep
	}
	debug.SetMemoryLimit(base + h.hash.inFlight.Load()*int64(h.hash.params.Memory)*1024 + runs)
}

// hashPassword hashes password in a slot.
func (h *Handlers) hashPassword(c *fiber.Ctx, password string) (string, error) {
	var hash string
	err := h.hashing(c, func() { hash = auth.HashPassword(password, h.hash.params) })
	return hash, err
}

type passwordInput struct {
	CurrentPassword string `json:"current_password" form:"current_password" validate:"required_without=TargetUID,max=1024"`
	NewPassword     string `json:"new_password" form:"new_password" validate:"required,min=10,max=1024"`
	TargetUID       int64  `json:"target_uid" form:"target_uid" validate:"omitempty,min=1"`
}

type accountView struct {
	Base
	Form Form
}

// accountShow renders /web/account: the caller's password form.
func (h *Handlers) accountShow(c *fiber.Ctx) error {
	return h.respond(c, Reply{Page: "account/index", View: accountView{Base: h.base(c, "Your account")}})
}

// passwordUpdate answers POST /user/password: one's own password with the
// current one, or, for ROOT, another user's with target_uid. The change ends
// the user's older JWTs and browser sessions; the browser that made it stays
// signed in under a new session token.
func (h *Handlers) passwordUpdate(c *fiber.Ctx) error {
	page := func() (Reply, *Form, error) {
		view := accountView{Base: h.base(c, "Your account")}
		return Reply{Page: "account/index", Fragment: "account/form", View: &view}, &view.Form, nil
	}
	var in passwordInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, page, "current_password", "new_password")
	}
	me := current(c).User
	target := me
	if in.TargetUID != 0 && in.TargetUID != me.ID {
		if me.Role != store.RoleRoot {
			return forbidden("only ROOT may set another user's password")
		}
		u, err := h.store.UserByID(c.UserContext(), in.TargetUID)
		if err != nil {
			return err
		}
		target = u
	} else {
		// The caller is read without its hash: only this check needs it.
		stored, err := h.store.UserByID(c.UserContext(), me.ID)
		if err != nil {
			return err
		}
		var perr error
		if err := h.hashing(c, func() { perr = auth.CheckPassword(in.CurrentPassword, stored.PasswordHash) }); err != nil {
			return err
		}
		if perr != nil {
			err := &ValidationError{Fields: map[string]string{"current_password": "is not your current password"}}
			return h.formError(c, err, page, "current_password", "new_password")
		}
	}
	hash, err := h.hashPassword(c, in.NewPassword)
	if err != nil {
		return err
	}
	version, err := h.store.SetPassword(c.UserContext(), target.ID, hash)
	if err != nil {
		return err
	}
	if target.ID == me.ID && hasSession(c.UserContext()) {
		if err := h.sessions.RenewToken(c.UserContext()); err != nil {
			return err
		}
		h.sessions.Put(c.UserContext(), sessionVersionKey, int64(version))
	}
	h.flash(c, "success", "Password changed. Other sessions of "+target.Username+" are signed out.")
	return h.respond(c, Reply{Message: "Password changed", Redirect: "/web/account"})
}
