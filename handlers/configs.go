package handlers

import (
	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

// configDTO is a config as the API shows it (docs/security.md).
type configDTO struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type configInput struct {
	Key   string `json:"key" form:"key" validate:"required,config_key"`
	Value string `json:"value" form:"value" validate:"required,max=10000"`
}

type configQuery struct {
	Key string `query:"key" json:"key" validate:"required"`
}

type configsView struct {
	Base
	Configs []store.Config
	Pager   Pager
	Form    Form
}

// configList answers GET /config/fetch/all and renders /web/configs.
func (h *Handlers) configList(c *fiber.Ctx) error {
	var q listQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	view, err := h.configsPage(c, q)
	if err != nil {
		return err
	}
	dtos := make([]configDTO, len(view.Configs))
	for i, cf := range view.Configs {
		dtos[i] = configDTO{Key: cf.Key, Value: cf.Value}
	}
	return h.respond(c, Reply{Data: dtos, Amount: &view.Pager.Total, Page: "configs/index", View: view})
}

func (h *Handlers) configsPage(c *fiber.Ctx, q listQuery) (configsView, error) {
	page := q.page(defaultLimit(c, 20))
	configs, total, err := h.store.ListConfigs(c.UserContext(), page)
	return configsView{Base: h.base(c, "Configs"), Configs: configs, Pager: newPager(c, page, len(configs), total)}, err
}

// configShow answers GET /config/fetch/one.
func (h *Handlers) configShow(c *fiber.Ctx) error {
	var q configQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	cf, err := h.store.ConfigByKey(c.UserContext(), q.Key)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Data: configDTO{Key: cf.Key, Value: cf.Value}})
}

// configCreate answers POST /config/create; an existing key is 422.
func (h *Handlers) configCreate(c *fiber.Ctx) error {
	return h.configSave(c, true)
}

// configUpdate answers PATCH /config/update; an unknown key is 404.
func (h *Handlers) configUpdate(c *fiber.Ctx) error {
	return h.configSave(c, false)
}

func (h *Handlers) configSave(c *fiber.Ctx, create bool) error {
	page := func() (Reply, *Form, error) {
		view, err := h.configsPage(c, listQuery{})
		return Reply{Page: "configs/index", Fragment: "configs/form", View: &view}, &view.Form, err
	}
	var in configInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, page)
	}
	cf := store.Config{Key: in.Key, Value: in.Value}
	status, msg := fiber.StatusOK, "Config updated"
	var err error
	if create {
		status, msg, err = fiber.StatusCreated, "Config created", h.store.CreateConfig(c.UserContext(), &cf)
	} else {
		err = h.store.UpdateConfig(c.UserContext(), &cf)
	}
	if err != nil {
		return h.formError(c, err, page)
	}
	h.flash(c, "success", msg+": "+cf.Key)
	return h.respond(c, Reply{Status: status, Message: msg, Data: configDTO{Key: cf.Key, Value: cf.Value}, Redirect: "/web/configs"})
}

// configDelete answers DELETE /config/delete.
func (h *Handlers) configDelete(c *fiber.Ctx) error {
	var q configQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := h.store.DeleteConfig(c.UserContext(), q.Key); err != nil {
		return err
	}
	h.flash(c, "success", "Config "+q.Key+" deleted.")
	return h.respond(c, Reply{Message: "Config deleted", Redirect: "/web/configs"})
}
