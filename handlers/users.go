package handlers

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

// userDTO is a user as the API shows it (docs/security.md); password and
// reset_token are always empty.
type userDTO struct {
	ID             int64    `json:"id"`
	FirstName      string   `json:"first_name"`
	LastName       string   `json:"last_name"`
	Username       string   `json:"username"`
	Email          string   `json:"email"`
	Password       string   `json:"password"`
	Role           string   `json:"role"`
	ResetToken     string   `json:"reset_token"`
	Bio            string   `json:"bio"`
	ProfilePicture string   `json:"profile_picture"`
	IsPublic       bool     `json:"is_public"`
	Links          []string `json:"links"`
}

func newUserDTO(u store.User) userDTO {
	links := u.Links
	if links == nil {
		links = []string{}
	}
	return userDTO{ID: u.ID, FirstName: u.FirstName, LastName: u.LastName, Username: u.Username, Email: u.Email,
		Role: u.Role, Bio: u.Bio, ProfilePicture: u.ProfilePicture, IsPublic: u.IsPublic, Links: links}
}

type registerInput struct {
	FirstName string `json:"first_name" form:"first_name" validate:"max=100"`
	LastName  string `json:"last_name" form:"last_name" validate:"max=100"`
	Username  string `json:"username" form:"username" validate:"required,username"`
	Email     string `json:"email" form:"email" validate:"required,email,max=254"`
	Password  string `json:"password" form:"password" validate:"required,min=10,max=1024"`
	Role      string `json:"role" form:"role" validate:"required,oneof=ROOT ADMIN AUTHOR VIEWER"`
}

type targetQuery struct {
	TargetUID int64 `query:"target_uid" json:"target_uid" validate:"required,min=1"`
}

type roleInput struct {
	TargetUID int64  `json:"target_uid" form:"target_uid" validate:"required,min=1"`
	Role      string `json:"role" form:"role" validate:"required,oneof=ROOT ADMIN AUTHOR VIEWER"`
}

type usersView struct {
	Base
	Users []store.User
	Pager Pager
	Roles []string
	Form  Form
}

// userList answers GET /user/fetch and renders /web/users.
func (h *Handlers) userList(c *fiber.Ctx) error {
	view := usersView{Base: h.base(c, "Users"), Roles: roles}
	// ?new= comes from a project's "is not a user": the new account's form
	// starts with that username.
	if name := c.Query("new"); name != "" {
		view.Form.Values = map[string]string{"username": name}
	}
	if err := h.fillUsers(c, &view); err != nil {
		return err
	}
	dtos := make([]userDTO, len(view.Users))
	for i, u := range view.Users {
		dtos[i] = newUserDTO(u)
	}
	return h.respond(c, Reply{Data: dtos, Amount: &view.Pager.Total, Page: "users/index", View: view})
}

func (h *Handlers) fillUsers(c *fiber.Ctx, view *usersView) error {
	var q listQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	page := q.page(defaultLimit(c, 20))
	users, total, err := h.store.ListUsers(c.UserContext(), page)
	if err != nil {
		return err
	}
	view.Users, view.Pager = users, newPager(c, page, len(users), total)
	return nil
}

// userShow answers GET /user/fetch/one.
func (h *Handlers) userShow(c *fiber.Ctx) error {
	var q targetQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	u, err := h.store.UserByID(c.UserContext(), q.TargetUID)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Data: newUserDTO(u)})
}

// userCreate answers POST /user/register.
func (h *Handlers) userCreate(c *fiber.Ctx) error {
	page := func() (Reply, *Form, error) {
		view := usersView{Base: h.base(c, "Users"), Roles: roles}
		return Reply{Page: "users/index", Fragment: "users/form", View: &view}, &view.Form, nil
	}
	var in registerInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, page)
	}
	hash, err := h.hashPassword(c, in.Password)
	if err != nil {
		return err
	}
	u := store.User{FirstName: in.FirstName, LastName: in.LastName, Username: in.Username, Email: in.Email,
		Role: in.Role, PasswordHash: hash}
	if err := h.store.CreateUser(c.UserContext(), &u); err != nil {
		return h.formError(c, err, page)
	}
	h.flash(c, "success", "User "+u.Username+" created.")
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "User created", Data: newUserDTO(u), Redirect: "/web/users"})
}

// userRoleUpdate answers PATCH /user/update/role.
func (h *Handlers) userRoleUpdate(c *fiber.Ctx) error {
	var in roleInput
	if err := bind(c, &in); err != nil {
		return err
	}
	u, err := h.store.UpdateUserRole(c.UserContext(), in.TargetUID, in.Role)
	if errors.Is(err, store.ErrLastRoot) && representationOf(c) == asFragment {
		// The row's form comes back showing the role the user still has,
		// with the reason beside it.
		if u, err = h.store.UserByID(c.UserContext(), in.TargetUID); err != nil {
			return err
		}
		view := userRoleView{User: u, Roles: roles, Error: "The last ROOT account must stay ROOT: make another user ROOT first."}
		return h.respond(c, Reply{Status: fiber.StatusUnprocessableEntity, Fragment: "users/role", View: view})
	}
	if err != nil {
		return err
	}
	h.flash(c, "success", "Role of "+u.Username+" is now "+u.Role+".")
	return h.respond(c, Reply{Message: "Role updated", Data: newUserDTO(u), Redirect: "/web/users",
		Fragment: "users/role", View: userRoleView{User: u, Roles: roles}})
}

// userRoleView is one user's role form on the users page (the table
// passes the same names with dict).
type userRoleView struct {
	User  store.User
	Roles []string
	Error string
}

// userDelete answers DELETE /user/delete.
func (h *Handlers) userDelete(c *fiber.Ctx) error {
	var q targetQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := h.store.DeleteUser(c.UserContext(), q.TargetUID); err != nil {
		return err
	}
	h.flash(c, "success", "User deleted.")
	return h.respond(c, Reply{Message: "User deleted", Redirect: "/web/users"})
}
