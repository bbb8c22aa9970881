package handlers

import (
	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

// mount registers the whole URL space: its middleware, then every path
// with its method, rights and handler. It is one function, longer than
// the rest, on purpose: the URL space reads whole in one place, one line
// a path, grouped as docs/architecture.md lists them.
func mount(app *fiber.App, h *Handlers) {
	app.Use(h.observe, h.recoverPanics, h.securityHeaders, h.splitOrigins, h.compressAnswers(), h.checkInput, h.deadline)
	app.Use("/static", h.assets.Handler(h.cfg.Production))

	// Operations: always JSON, no session.
	app.Get("/healthz", h.healthShow)
	app.Get("/readyz", h.readyShow)

	// API description and its viewer.
	app.Get("/openapi.json", h.apiDocShow)
	app.Get("/scalar", h.apiViewerShow)

	// Routes of projects (docs/engine.md): JSON for every caller, no session;
	// a route with auth_jwt reads the caller's bearer token itself.
	app.All("/x/*", h.runRoute)

	// Metrics by a scraper's METRICS_TOKEN; any other caller goes on to
	// the ROOT check below.
	app.Get("/metrics", h.metricsByToken)

	// Everything below has a browser session (unsafe requests on it need the
	// CSRF token), sends browsers to first-run setup while no user exists,
	// and knows its caller: session, JWT or personal access token.
	app.Use(h.loadSession, h.checkCSRF, h.requireSetup, h.authenticate, h.checkUID)

	signedIn := h.atLeast(store.RoleViewer)
	admin := h.atLeast(store.RoleAdmin)
	root := h.atLeast(store.RoleRoot)

	// Start page, first run, browser sign-in.
	app.Get("/", h.homeShow)
	app.Get("/web/setup", h.setupShow)
	app.Post("/web/setup", h.setupCreate)
	app.Get("/web/login", h.loginShow)
	app.Post("/web/login", h.loginCreate)
	app.Post("/web/logout", h.logout)

	// Invitations and password resets: by one-time links (docs/mail.md).
	app.Get("/web/invite", h.inviteShow)
	app.Post("/user/invite/accept", h.inviteAccept)
	app.Get("/web/forgot", h.forgotShow)
	app.Post("/user/password/forgot", h.passwordForgot)
	app.Get("/web/reset", h.resetShow)
	app.Post("/user/password/reset", h.passwordReset)

	// Session tokens for API clients; one's own password.
	app.Post("/user/login", h.userLogin)
	app.Post("/user/password", signedIn, h.passwordUpdate)
	app.Get("/web/account", signedIn, h.accountShow)

	// Users (ROOT).
	app.Post("/user/register", root, h.userCreate)
	app.Get("/user/fetch", root, h.userList)
	app.Get("/user/fetch/one", root, h.userShow)
	app.Patch("/user/update/role", root, h.userRoleUpdate)
	app.Delete("/user/delete", root, h.userDelete)
	app.Get("/web/users", root, h.userList)

	// Projects and members: members see a project; ADMIN and ROOT members
	// manage it.
	app.Post("/project/create", admin, h.projectCreate)
	app.Get("/project/fetch", signedIn, h.projectList)
	app.Get("/project/fetch/one", signedIn, h.projectShow)
	app.Patch("/project/update", admin, h.projectUpdate)
	app.Delete("/project/delete", admin, h.projectDelete)
	app.Get("/project/export", admin, h.projectExport)
	app.Post("/project/plan", admin, h.projectPlan)
	app.Post("/project/apply", admin, h.projectApply)
	app.Post("/project/member/add", admin, h.memberAdd)
	app.Post("/project/member/remove", admin, h.memberRemove)
	app.Patch("/project/member/role", admin, h.memberRole)
	app.Post("/project/invite", admin, h.projectInvite)
	app.Get("/project/invitations", admin, h.invitationList)
	app.Delete("/project/invitation/delete", admin, h.invitationDelete)
	app.Get("/web/projects", signedIn, h.projectList)
	app.Get("/web/project", signedIn, h.projectShow)
	app.Get("/web/project/apply", admin, h.projectFilePage)

	// Personal access tokens: one's own; a token cannot make tokens.
	app.Post("/pat/create", signedIn, h.notByPAT, h.patCreate)
	app.Get("/pat/fetch", signedIn, h.patList)
	app.Delete("/pat/delete", signedIn, h.patDelete)
	app.Get("/web/pats", signedIn, h.patList)

	// Vaults: ADMIN and ROOT members of the project.
	app.Post("/vault/create", admin, h.vaultCreate)
	app.Get("/vault/fetch", admin, h.vaultList)
	app.Get("/vault/fetch/one", admin, h.vaultShow)
	app.Patch("/vault/update", admin, h.vaultUpdate)
	app.Delete("/vault/delete", admin, h.vaultDelete)
	app.Get("/vault/versions", admin, h.vaultVersionList)
	app.Post("/vault/import", admin, h.vaultImport)
	app.Get("/vault/export", admin, h.vaultExport)
	app.Post("/vault/restore", admin, h.vaultRestore)
	app.Get("/vault/log", admin, h.vaultLog)
	app.Get("/web/vaults", admin, h.vaultProjects)
	app.Get("/web/vault", admin, h.vaultIndex)
	app.Get("/web/vault/row", admin, h.vaultRow)
	app.Get("/web/vault/log", admin, h.vaultLog)
	app.Get("/web/vault/versions", admin, h.vaultVersionList)
	app.Get("/web/vault/import", admin, h.vaultImportPage)

	author := h.atLeast(store.RoleAuthor)

	// Collections and their records: members read; ADMIN and ROOT members
	// manage collections, AUTHOR members and up write records.
	app.Post("/collection/create", admin, h.collectionCreate)
	app.Get("/collection/fetch", signedIn, h.collectionList)
	app.Get("/collection/fetch/one", signedIn, h.collectionShow)
	app.Patch("/collection/update", admin, h.collectionUpdate)
	app.Delete("/collection/delete", admin, h.collectionDelete)
	app.Post("/data/create", author, h.recordCreate)
	app.Get("/data/fetch", signedIn, h.recordList)
	app.Get("/data/fetch/one", signedIn, h.recordShow)
	app.Patch("/data/update", author, h.recordUpdate)
	app.Delete("/data/delete", author, h.recordDelete)
	app.Get("/data/export", signedIn, h.recordExport)
	app.Post("/data/import", author, h.recordImport)
	app.Get("/web/data", signedIn, h.dataIndex)
	app.Get("/web/data/collection", signedIn, h.recordPage)
	app.Patch("/web/data/cell", author, h.recordCell)
	app.Post("/web/data/record", author, h.recordFormCreate)

	// Route templates: everyone signed in reads the global ones, members a
	// project's; AUTHOR and up write (members, for a project's).
	// Template and route documents: JSON only, at most 1 MiB.
	document := documentBody
	app.Post("/route/template/create", document, author, h.templateSave)
	app.Get("/route/template/fetch", signedIn, h.templateList)
	app.Get("/route/template/fetch/one", signedIn, h.templateShow)
	app.Delete("/route/template/delete", author, h.templateDelete)
	app.Post("/route/template/apply", document, author, h.templateApply)
	app.Get("/route/template/versions", signedIn, h.templateVersionList)
	app.Post("/route/template/restore", author, h.templateRestore)

	// Routes of a project: members read, AUTHOR members and up write.
	app.Post("/route/create", document, author, h.routeCreate)
	app.Get("/route/fetch", signedIn, h.routeList)
	app.Get("/route/fetch/one", signedIn, h.routeShow)
	app.Patch("/route/update", document, author, h.routeUpdate)
	app.Delete("/route/delete", author, h.routeDelete)
	app.Get("/route/runs", signedIn, h.runList)
	app.Get("/route/stats", signedIn, h.routeStats)
	app.Get("/route/versions", signedIn, h.routeVersionList)
	app.Get("/route/version", signedIn, h.routeVersionShow)
	app.Post("/route/restore", author, h.routeRestore)
	app.Post("/route/upgrade", author, h.routeUpgrade)
	app.Post("/route/test/create", author, h.testCreate)
	app.Get("/route/test/fetch", signedIn, h.testList)
	app.Patch("/route/test/update", author, h.testUpdate)
	app.Delete("/route/test/delete", author, h.testDelete)
	app.Post("/route/test/run", author, h.testRun)
	app.Post("/route/schedule/create", author, h.scheduleCreate)
	app.Get("/route/schedule/fetch", signedIn, h.scheduleList)
	app.Patch("/route/schedule/update", author, h.scheduleUpdate)
	app.Delete("/route/schedule/delete", author, h.scheduleDelete)
	app.Get("/route/job/fetch", signedIn, h.jobList)
	app.Post("/route/job/cancel", author, h.jobCancel)
	app.Post("/route/job/retry", author, h.jobRetry)
	app.Post("/route/run", document, author, h.routeRun)

	// Template and route pages.
	app.Get("/web/routes/templates", signedIn, h.templatesIndex)
	app.Get("/web/routes/templates/view", signedIn, h.templateShow)
	app.Get("/web/routes/templates/history", signedIn, h.templateVersionList)
	app.Get("/web/routes/templates/create", author, h.templateEditor)
	app.Get("/web/routes/templates/edit", author, h.templateEditor)
	app.Post("/web/routes/templates/lint", document, signedIn, h.templateLint)
	app.Get("/web/routes", signedIn, h.routesIndex)
	app.Get("/web/routes/view", signedIn, h.routeShow)
	app.Get("/web/routes/runs", signedIn, h.runList)
	app.Get("/web/routes/jobs", signedIn, h.jobList)
	app.Get("/web/routes/stats", signedIn, h.statsPage)
	app.Get("/web/routes/history", signedIn, h.routeVersionList)
	app.Get("/web/routes/upgrade", author, h.routeUpgradePage)
	app.Get("/web/routes/run", signedIn, h.runPage)
	app.Get("/web/routes/try", author, h.routeTryPage)
	app.Get("/web/routes/docs", signedIn, h.routeDocsPage)
	app.Post("/web/routes/lint", document, author, h.routeLint)
	app.Get("/web/routes/create", author, h.routeEditor)
	app.Get("/web/routes/edit", author, h.routeEditPage)

	// Mail: members read a project's email templates, ADMIN and ROOT
	// members write them and see its outbox.
	app.Post("/email/template/create", admin, h.emailTemplateCreate)
	app.Get("/email/template/fetch", signedIn, h.emailTemplateList)
	app.Get("/email/template/fetch/one", signedIn, h.emailTemplateShow)
	app.Patch("/email/template/update", admin, h.emailTemplateUpdate)
	app.Delete("/email/template/delete", admin, h.emailTemplateDelete)
	app.Get("/outbox/fetch", admin, h.outboxList)
	app.Get("/outbox/fetch/one", admin, h.outboxShow)
	app.Post("/outbox/retry", admin, h.outboxRetry)
	app.Post("/outbox/cancel", admin, h.outboxCancel)
	app.Get("/web/email", signedIn, h.emailTemplateList)
	app.Get("/web/email/template", signedIn, h.emailTemplateShow)
	app.Get("/web/outbox", admin, h.outboxList)
	app.Get("/web/outbox/message", admin, h.outboxShow)

	// Metrics (ROOT; or, with METRICS_ADDR, on a listener of their own).
	app.Get("/metrics", root, h.metricsShow)

	// Configs (ROOT).
	app.Get("/config/fetch/all", root, h.configList)
	app.Get("/config/fetch/one", root, h.configShow)
	app.Post("/config/create", root, h.configCreate)
	app.Patch("/config/update", root, h.configUpdate)
	app.Delete("/config/delete", root, h.configDelete)
	app.Get("/web/configs", root, h.configList)
	app.Get("/event/fetch", admin, h.events)
	app.Get("/web/events", admin, h.events)
}
