package handlers

import (
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"stencil/accounts"
	"stencil/auth"
	"stencil/store"
)

var errBadLogin = fiber.NewError(fiber.StatusUnauthorized, accounts.ErrBadLogin.Error())

type loginInput struct {
	AuthData string `json:"auth_data" form:"auth_data" validate:"required,max=254"`
	Password string `json:"password" form:"password" validate:"required,max=1024"`
	Next     string `json:"-" form:"next"`
}

// loginResponse is the one answer whose fields stand beside status and
// message instead of under data (docs/security.md).
type loginResponse struct {
	Status  int     `json:"status"`
	Message string  `json:"message"`
	UID     int64   `json:"uid"`
	JWT     string  `json:"jwt"`
	User    userDTO `json:"user"`
}

// userLogin answers POST /user/login with a session token.
func (h *Handlers) userLogin(c *fiber.Ctx) error {
	var in loginInput
	if err := bind(c, &in); err != nil {
		return err
	}
	user, err := h.checkLogin(c, in)
	if err != nil {
		return err
	}
	token, err := auth.IssueJWT(h.cfg.JWTSecret, user.ID, user.CredentialVersion, time.Now(), h.cfg.JWTTTL)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Body: loginResponse{Status: fiber.StatusOK, Message: "Login successful", UID: user.ID, JWT: token, User: newUserDTO(user)}})
}

// checkLogin verifies credentials under the throttle (accounts.SignIn),
// counting each outcome: a throttled client is told when to try again.
func (h *Handlers) checkLogin(c *fiber.Ctx, in loginInput) (store.User, error) {
	user, err := h.accounts.SignIn(c.UserContext(), in.AuthData, in.Password, c.IP())
	var wait *accounts.Throttled
	switch {
	case errors.As(err, &wait):
		h.metrics.Login("throttled")
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(wait.RetryAfter))
		return user, fiber.NewError(fiber.StatusTooManyRequests, wait.Error())
	case errors.Is(err, auth.ErrBusy):
		h.metrics.Login("busy")
		c.Set(fiber.HeaderRetryAfter, "1")
		return user, errors.Join(errHashingBusy, err)
	case errors.Is(err, accounts.ErrBadLogin):
		h.metrics.Login("failure")
		return user, errBadLogin
	case err != nil:
		return user, err
	}
	h.metrics.Login("success")
	return user, nil
}

type loginView struct {
	Base
	Form    Form
	Message string
	Next    string
}

// loginShow renders the sign-in form.
func (h *Handlers) loginShow(c *fiber.Ctx) error {
	if current(c) != nil {
		return h.respond(c, Reply{Redirect: safeNext(c.Query("next"))})
	}
	return h.respond(c, Reply{Page: "session/login", View: loginView{Base: h.base(c, "Sign in"), Next: c.Query("next")}})
}

// loginCreate signs a browser in.
func (h *Handlers) loginCreate(c *fiber.Ctx) error {
	view := loginView{Base: h.base(c, "Sign in")}
	reply := Reply{Page: "session/login", Fragment: "session/login_form", View: &view}
	var in loginInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, func() (Reply, *Form, error) { return reply, &view.Form, nil })
	}
	view.Next = in.Next
	user, err := h.checkLogin(c, in)
	if err != nil {
		var ferr *fiber.Error
		if !errors.As(err, &ferr) || representationOf(c) == asJSON {
			return err
		}
		view.Form.Values = map[string]string{"auth_data": in.AuthData}
		view.Message = peopleMessage(c, ferr.Code, errorMessage(ferr))
		reply.Status = ferr.Code
		return h.respond(c, reply)
	}
	if err := h.signIn(c, user); err != nil {
		return err
	}
	return h.respond(c, Reply{Message: "Signed in", Redirect: safeNext(in.Next), Reload: true})
}

// logout ends the browser session's sign-in under a new session token.
func (h *Handlers) logout(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if !hasSession(ctx) {
		return errNoBrowserSession
	}
	if err := h.sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.sessions.Remove(ctx, sessionUserKey)
	h.flash(c, "success", "You are signed out.")
	return h.respond(c, Reply{Message: "Signed out", Redirect: "/web/login", Reload: true})
}

// safeNext keeps a post-login destination on this site: a path that starts
// with one /, holds no \\, and no control or white-space character
// (docs/security.md); anything else lands on /.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsRune(next, '\\') ||
		strings.ContainsFunc(next, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || r == utf8.RuneError }) {
		return "/"
	}
	return next
}

type setupInput struct {
	FirstName string `json:"first_name" form:"first_name" validate:"max=100"`
	LastName  string `json:"last_name" form:"last_name" validate:"max=100"`
	Username  string `json:"username" form:"username" validate:"required,username"`
	Email     string `json:"email" form:"email" validate:"required,email,max=254"`
	Password  string `json:"password" form:"password" validate:"required,min=10,max=1024"`
}

type setupView struct {
	Base
	Form Form
}

// setupShow renders the first-run form, while no user exists.
func (h *Handlers) setupShow(c *fiber.Ctx) error {
	if has, err := h.store.HasUsers(c.UserContext()); err != nil || has {
		if err != nil {
			return err
		}
		return h.respond(c, Reply{Redirect: "/web/login"})
	}
	return h.respond(c, Reply{Page: "session/setup", View: h.newSetupView(c)})
}

// newSetupView is the first-run page's view: no account exists yet, so the
// layout offers no sign-in.
func (h *Handlers) newSetupView(c *fiber.Ctx) setupView {
	view := setupView{Base: h.base(c, "Set up Stencil")}
	view.Setup = true
	return view
}

// setupCreate creates the first ROOT account and signs it in; once any user
// exists it refuses.
func (h *Handlers) setupCreate(c *fiber.Ctx) error {
	page := func() (Reply, *Form, error) {
		view := h.newSetupView(c)
		return Reply{Page: "session/setup", Fragment: "session/setup_form", View: &view}, &view.Form, nil
	}
	var in setupInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, page)
	}
	hash, err := h.hashPassword(c, in.Password)
	if err != nil {
		return err
	}
	user := store.User{FirstName: in.FirstName, LastName: in.LastName, Username: in.Username, Email: in.Email,
		Role: store.RoleRoot, PasswordHash: hash}
	if err := h.store.CreateFirstUser(c.UserContext(), &user); err != nil {
		return h.formError(c, err, page)
	}
	h.setUp.Store(true)
	if err := h.signIn(c, user); err != nil {
		return err
	}
	h.flash(c, "success", "Welcome, "+user.Username+". Your ROOT account is ready.")
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Created", Data: newUserDTO(user), Redirect: "/", Reload: true})
}

// requireSetup sends browsers to /web/setup while no user exists.
func (h *Handlers) requireSetup(c *fiber.Ctx) error {
	if h.setUp.Load() || c.Path() == "/web/setup" || representationOf(c) == asJSON {
		return c.Next()
	}
	has, err := h.store.HasUsers(c.UserContext())
	if err != nil {
		return err
	}
	if has {
		h.setUp.Store(true)
		return c.Next()
	}
	return h.respond(c, Reply{Redirect: "/web/setup"})
}
