package handlers

import (
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/egress"
	"stencil/runs"
	"stencil/store"
)

// projectDTO is a project as the API shows it.
type projectDTO struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	APIPath     string      `json:"api_path"`
	XRateLimit  int         `json:"x_rate_limit"`
	XRateBurst  int         `json:"x_rate_burst"`
	CORSOrigins []string    `json:"x_cors_origins"`
	EgressHosts []string    `json:"x_egress_hosts"`
	CreatedBy   *int64      `json:"created_by"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
	MemberCount int         `json:"member_count"`
	IsMember    bool        `json:"is_member"`
	Role        string      `json:"role,omitempty"` // the caller's, in the project (docs/roles.md)
	Members     []memberDTO `json:"members,omitempty"`
}

// memberDTO is a member of a project: the membership's role and the role
// it works with there (docs/roles.md).
type memberDTO struct {
	ID            int64     `json:"id"`
	Username      string    `json:"username"`
	FirstName     string    `json:"first_name"`
	LastName      string    `json:"last_name"`
	Role          string    `json:"role"`
	EffectiveRole string    `json:"effective_role"`
	AddedAt       time.Time `json:"added_at"`
}

// memberRolesDTO is who joined a project, with their role there.
type memberRolesDTO struct {
	UID           int64  `json:"uid"`
	Username      string `json:"username"`
	Role          string `json:"role"`
	EffectiveRole string `json:"effective_role"`
}

func newMemberDTO(m store.Member) memberDTO {
	return memberDTO{ID: m.UserID, Username: m.Username, FirstName: m.FirstName, LastName: m.LastName,
		Role: m.Role, EffectiveRole: m.Effective(), AddedAt: m.AddedAt}
}

func newProjectDTO(c *fiber.Ctx, p store.Project, members []store.Member) projectDTO {
	dto := projectDTO{Role: projectRole(c, p), ID: p.ID, Name: p.Name, Description: p.Description, APIPath: p.APIPath, XRateLimit: p.XRateLimit, XRateBurst: p.XRateBurst, CORSOrigins: p.XCORSOrigins, EgressHosts: p.XEgressHosts, CreatedBy: p.CreatedBy,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, MemberCount: p.Members, IsMember: p.IsMember}
	for _, m := range members {
		dto.Members = append(dto.Members, newMemberDTO(m))
	}
	return dto
}

// projectInput is a project's settings as given (authoring.Project).
type projectInput = authoring.Project

type projectUpdateInput struct {
	ProjectID   string              `json:"project_id" form:"project_id" validate:"required"`
	Name        *string             `json:"name" form:"name" validate:"omitnil,min=1,max=100"`
	Description *string             `json:"description" form:"description" validate:"omitnil,max=1000"`
	APIPath     *string             `json:"api_path" form:"api_path" validate:"omitnil,api_path"`
	XRateLimit  *int                `json:"x_rate_limit" form:"x_rate_limit" validate:"omitnil,min=0,max=100000"`
	XRateBurst  *int                `json:"x_rate_burst" form:"x_rate_burst" validate:"omitnil,min=1,max=100000"`
	CORSOrigins *authoring.LineList `json:"x_cors_origins" form:"x_cors_origins"`
	EgressHosts *authoring.LineList `json:"x_egress_hosts" form:"x_egress_hosts"`
}

type projectQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
}

type projectListQuery struct {
	listQuery
	All bool `query:"all" json:"all"`
}

type projectsView struct {
	Base
	Projects []store.Project
	Pager    Pager
	All      bool
	CanAll   bool
	CanAdd   bool
	Form     Form
}

// projectList answers GET /project/fetch and renders /web/projects: the
// caller's projects, or with all (ROOT only) every project.
func (h *Handlers) projectList(c *fiber.Ctx) error {
	view := projectsView{Base: h.base(c, "Projects")}
	if err := h.fillProjects(c, &view); err != nil {
		return err
	}
	dtos := make([]projectDTO, len(view.Projects))
	for i, p := range view.Projects {
		dtos[i] = newProjectDTO(c, p, nil)
	}
	return h.respond(c, Reply{Data: dtos, Amount: &view.Pager.Total, Page: "projects/index", View: view})
}

func (h *Handlers) fillProjects(c *fiber.Ctx, view *projectsView) error {
	var q projectListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	me := current(c).User
	view.CanAll, view.CanAdd, view.All = me.Role == store.RoleRoot, callerAtLeast(c, store.RoleAdmin), q.All
	if q.All && !view.CanAll {
		return forbidden("only ROOT users may list every project")
	}
	page := q.page(defaultLimit(c, 20))
	projects, total, err := h.store.ListProjects(c.UserContext(), me.ID, q.All, page)
	if err != nil {
		return err
	}
	view.Projects, view.Pager = projects, newPager(c, page, len(projects), total)
	return nil
}

// projectCreate answers POST /project/create; the creator becomes a member.
func (h *Handlers) projectCreate(c *fiber.Ctx) error {
	page := func() (Reply, *Form, error) {
		view := projectsView{Base: h.base(c, "Projects"), CanAdd: true}
		return Reply{Page: "projects/index", Fragment: "projects/form", View: &view}, &view.Form, nil
	}
	var in projectInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, page)
	}
	p := store.Project{ID: in.ID, Name: in.Name, Description: in.Description, APIPath: in.APIPath,
		XRateLimit: authoring.Deref(in.XRateLimit, store.DefaultXRateLimit), XRateBurst: authoring.Deref(in.XRateBurst, store.DefaultXRateBurst)}
	var err error
	if p.XCORSOrigins, err = in.CORSOrigins.Check("x_cors_origins", runs.Origins, nil); err != nil {
		return h.formError(c, err, page)
	}
	if p.XEgressHosts, err = in.EgressHosts.Check("x_egress_hosts", egress.Hosts, nil); err != nil {
		return h.formError(c, err, page)
	}
	if err := h.store.CreateProject(c.UserContext(), &p, current(c).User.ID); err != nil {
		return h.formError(c, err, page)
	}
	h.routesChanged(c, p.ID)
	h.flash(c, "success", "Project "+p.Name+" created.")
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Project created", Data: newProjectDTO(c, p, nil), Redirect: "/web/project?id=" + p.ID})
}

type projectView struct {
	Base
	Project  store.Project
	Members  []store.Member
	CanAdmin bool
	Form     Form // the details form
	Add      Form // the add-member form
	// MemberRoles are the roles the Members table's selects offer (ADMIN
	// and ROOT members).
	MemberRoles []string
	// Invitations (ADMIN and ROOT members): the form, the roles the caller
	// may give, the pending ones with their links while mail is held, and
	// the one just made.
	Invite      Form
	InviteRoles []string
	Invitations []store.Invitation
	InviteLinks map[int64]string
	Invited     int64
	MailHeld    bool
}

// projectShow answers GET /project/fetch/one and renders /web/project.
func (h *Handlers) projectShow(c *fiber.Ctx) error {
	id := c.Query("project_id", c.Query("id"))
	if id == "" {
		// Present but empty breaks a rule (422); absent is missing (400), as
		// for every other operation (docs/architecture.md).
		if c.Context().QueryArgs().Has("project_id") || c.Context().QueryArgs().Has("id") {
			return &ValidationError{Fields: map[string]string{"project_id": "must not be empty"}}
		}
		return &ValidationError{Fields: map[string]string{"project_id": "is required"}, Missing: true}
	}
	view, err := h.projectPage(c, id)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Data: newProjectDTO(c, view.Project, view.Members), Page: "projects/show", View: view})
}

func (h *Handlers) projectPage(c *fiber.Ctx, id string) (projectView, error) {
	project, err := h.member(c, id)
	if err != nil {
		return projectView{}, err
	}
	members, err := h.store.Members(c.UserContext(), id)
	if err != nil {
		return projectView{}, err
	}
	project.Members = len(members) // the caller's project comes without its count
	view := projectView{Base: h.base(c, project.Name), Project: project, Members: members,
		CanAdmin: canIn(c, project, store.RoleAdmin), MailHeld: h.mail.Held()}
	if view.CanAdmin {
		view.MemberRoles = memberRoles
	}
	if view.CanAdmin && representationOf(c) != asJSON {
		// The page offers the roles a project member works in; the API
		// also lets a ROOT user invite another ROOT (docs/mail.md).
		view.InviteRoles = []string{store.RoleAuthor, store.RoleViewer}
		if current(c).User.Role == store.RoleRoot {
			view.InviteRoles = []string{store.RoleAdmin, store.RoleAuthor, store.RoleViewer}
		}
		if view.Invitations, err = h.store.Invitations(c.UserContext(), id); err != nil {
			return view, err
		}
		view.InviteLinks = h.accounts.InvitationLinks(view.Invitations)
	}
	return view, nil
}

// projectUpdate answers PATCH /project/update (ADMIN or ROOT members).
func (h *Handlers) projectUpdate(c *fiber.Ctx) error {
	var in projectUpdateInput
	details := func(v *projectView) *Form { return &v.Form }
	if err := bind(c, &in); err != nil {
		if asValidation(err) == nil || in.ProjectID == "" {
			return err
		}
		return h.formError(c, err, h.projectForm(c, in.ProjectID, "projects/details", details))
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	p.Name, p.Description, p.APIPath = authoring.Deref(in.Name, p.Name), authoring.Deref(in.Description, p.Description), authoring.Deref(in.APIPath, p.APIPath)
	p.XRateLimit, p.XRateBurst = authoring.Deref(in.XRateLimit, p.XRateLimit), authoring.Deref(in.XRateBurst, p.XRateBurst)
	if p.XCORSOrigins, err = in.CORSOrigins.Check("x_cors_origins", runs.Origins, p.XCORSOrigins); err != nil {
		return h.formError(c, err, h.projectForm(c, in.ProjectID, "projects/details", details))
	}
	if p.XEgressHosts, err = in.EgressHosts.Check("x_egress_hosts", egress.Hosts, p.XEgressHosts); err != nil {
		return h.formError(c, err, h.projectForm(c, in.ProjectID, "projects/details", details))
	}
	if err := h.store.UpdateProject(c.UserContext(), &p); err != nil {
		return h.formError(c, err, h.projectForm(c, in.ProjectID, "projects/details", details))
	}
	h.routesChanged(c, p.ID)
	h.flash(c, "success", "Project saved.")
	return h.respond(c, Reply{Message: "Project updated", Data: newProjectDTO(c, p, nil), Redirect: "/web/project?id=" + p.ID})
}

// projectDelete answers DELETE /project/delete (ADMIN or ROOT members).
func (h *Handlers) projectDelete(c *fiber.Ctx) error {
	var q projectQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.DeleteProject(c.UserContext(), q.ProjectID); err != nil {
		return err
	}
	h.routesChanged(c, q.ProjectID)
	h.metrics.Forget(q.ProjectID, "")
	h.flash(c, "success", "Project "+q.ProjectID+" deleted.")
	return h.respond(c, Reply{Message: "Project deleted", Redirect: "/web/projects"})
}

type memberInput struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required"`
	TargetUID int64  `json:"target_uid" form:"target_uid" validate:"required_without=Username,omitempty,min=1"`
	Username  string `json:"username" form:"username" validate:"omitempty,max=50"`
}

// memberAddInput adds a member with a role; without one the member works
// with their account's role (a ROOT user's membership reads ADMIN).
type memberAddInput struct {
	memberInput
	Role string `json:"role" form:"role" validate:"omitempty,oneof=ADMIN AUTHOR VIEWER"`
}

type memberRoleInput struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required"`
	TargetUID int64  `json:"target_uid" form:"target_uid" validate:"required,min=1"`
	Role      string `json:"role" form:"role" validate:"required,oneof=ADMIN AUTHOR VIEWER"`
}

// memberRoles are the roles a membership may have, highest first.
var memberRoles = []string{store.RoleAdmin, store.RoleAuthor, store.RoleViewer}

// grantable refuses a membership role above the caller's own role in
// project (docs/roles.md).
func grantable(c *fiber.Ctx, project store.Project, role string) error {
	if own := projectRole(c, project); store.RoleRank(role) > store.RoleRank(own) {
		return forbidden("you may give roles up to your own in project " + authoring.Quote(project.ID) + " (" + own + ")")
	}
	return nil
}

// memberAdd answers POST /project/member/add: ADMIN or ROOT members add
// anyone; a ROOT user may also add itself to any project.
func (h *Handlers) memberAdd(c *fiber.Ctx) error {
	var in memberAddInput
	if err := bind(c, &in); err != nil {
		return err
	}
	me := current(c).User
	p, err := h.member(c, in.ProjectID)
	selfJoin := in.TargetUID == me.ID && me.Role == store.RoleRoot
	if err != nil && !(selfJoin && isStatus(err, fiber.StatusForbidden)) {
		return err
	}
	if selfJoin {
		p.Role = store.RoleAdmin // a ROOT user joins as what it is everywhere
	}
	page := h.projectForm(c, in.ProjectID, "projects/add_member", func(v *projectView) *Form { return &v.Add })
	target, err := h.memberTarget(c, in.memberInput)
	if err != nil {
		return h.formError(c, err, page)
	}
	role := in.Role
	if role == "" {
		role = store.MembershipRole(target.Role)
		if store.RoleRank(role) > store.RoleRank(projectRole(c, p)) {
			role = projectRole(c, p)
		}
	}
	if err := grantable(c, p, role); err != nil {
		return err
	}
	if err := h.store.AddMember(c.UserContext(), in.ProjectID, target.ID, role); err != nil {
		return h.formError(c, err, page)
	}
	effective := store.EffectiveRole(target.Role, role)
	h.flash(c, "success", target.Username+" is now a member as "+role+capNote(role, effective)+".")
	return h.respond(c, Reply{Message: "Member added", Data: memberRolesDTO{UID: target.ID, Username: target.Username, Role: role, EffectiveRole: effective},
		Redirect: "/web/project?id=" + in.ProjectID})
}

// memberRole answers PATCH /project/member/role (ADMIN and ROOT members):
// sets a membership's role, up to the caller's own there; the project's
// last ADMIN is kept (422). The Members table gets the member's role form
// back (with the refusal beside the select), as the users page does; a
// caller who lowered their own role below ADMIN gets the project page
// again, without the tools they no longer have.
func (h *Handlers) memberRole(c *fiber.Ctx) error {
	var in memberRoleInput
	if err := bind(c, &in); err != nil {
		return err
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	if err := grantable(c, p, in.Role); err != nil {
		return err
	}
	m, err := h.store.SetMemberRole(c.UserContext(), in.ProjectID, in.TargetUID, in.Role)
	if errors.Is(err, store.ErrNotFound) {
		err = fiber.NewError(fiber.StatusNotFound, "user "+strconv.FormatInt(in.TargetUID, 10)+" is not a member of project "+authoring.Quote(in.ProjectID))
	}
	if errors.Is(err, store.ErrLastAdmin) && representationOf(c) == asFragment {
		// The row's form comes back with the role the member still has.
		members, rerr := h.store.Members(c.UserContext(), p.ID)
		if rerr != nil {
			return rerr
		}
		for _, m := range members {
			if m.UserID == in.TargetUID {
				view := h.memberRoleView(c, p, m)
				view.Error = "The project's last ADMIN must stay ADMIN: make another member ADMIN first."
				return h.respond(c, Reply{Status: fiber.StatusUnprocessableEntity, Fragment: "projects/member_role", View: view})
			}
		}
	}
	if err != nil {
		return err
	}
	h.flash(c, "success", "Role of "+m.Username+" in "+p.Name+" is now "+m.Role+capNote(m.Role, m.Effective())+".")
	reply := Reply{Message: "Role updated", Data: newMemberDTO(m), Redirect: projectURL(p.ID)}
	if in.TargetUID == current(c).User.ID && !canIn(c, store.Project{Role: m.Role}, store.RoleAdmin) {
		reply.Reload = true
	} else {
		reply.Fragment, reply.View = "projects/member_role", h.memberRoleView(c, p, m)
	}
	return h.respond(c, reply)
}

// memberRoleView is one member's role form in the Members table (the
// table passes the same names with dict).
type memberRoleView struct {
	Project store.Project
	Member  store.Member
	Roles   []string
	Mine    bool
	Error   string
}

func (h *Handlers) memberRoleView(c *fiber.Ctx, p store.Project, m store.Member) memberRoleView {
	return memberRoleView{Project: p, Member: m, Roles: memberRoles, Mine: m.UserID == current(c).User.ID}
}

// memberTarget finds the user to add, by id or by username.
func (h *Handlers) memberTarget(c *fiber.Ctx, in memberInput) (store.User, error) {
	var u store.User
	var err error
	if in.TargetUID != 0 {
		u, err = h.store.UserByID(c.UserContext(), in.TargetUID)
	} else {
		u, err = h.store.UserByUsername(c.UserContext(), in.Username)
	}
	if errors.Is(err, store.ErrNotFound) {
		field := "target_uid"
		if in.TargetUID == 0 {
			field = "username"
		}
		return u, &ValidationError{Fields: map[string]string{field: "is not a user"}}
	}
	return u, err
}

// memberRemove answers POST /project/member/remove (ADMIN or ROOT members).
func (h *Handlers) memberRemove(c *fiber.Ctx) error {
	var in memberInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	if err := h.store.RemoveMember(c.UserContext(), in.ProjectID, in.TargetUID); err != nil {
		return err
	}
	h.flash(c, "success", "Member removed.")
	return h.respond(c, Reply{Message: "Member removed", Redirect: "/web/project?id=" + in.ProjectID})
}

// projectForm shows one form of the project page again: fragment, with the
// form that field picks.
func (h *Handlers) projectForm(c *fiber.Ctx, id, fragment string, field func(*projectView) *Form) formPage {
	return func() (Reply, *Form, error) {
		view, err := h.projectPage(c, id)
		return Reply{Page: "projects/show", Fragment: fragment, View: &view}, field(&view), err
	}
}

func isStatus(err error, code int) bool {
	var ferr *fiber.Error
	return errors.As(err, &ferr) && ferr.Code == code
}
