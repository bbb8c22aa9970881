package handlers

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// healthShow answers while the process is up.
func (h *Handlers) healthShow(c *fiber.Ctx) error {
	return h.respond(c, Reply{Message: "ok"})
}

// readyDTO is the JSON value of /readyz.
type readyDTO struct {
	Database   string `json:"database"`
	Migrations string `json:"migrations"`
}

// readyShow answers 200 when the database is reachable and every migration
// is applied, 503 otherwise.
func (h *Handlers) readyShow(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	dto := readyDTO{Database: "unreachable", Migrations: "unknown"}
	if err := h.probe.Ping(ctx); err == nil {
		dto.Database = "ok"
		applied, err := h.probe.MigrationsApplied(ctx)
		switch {
		case err != nil:
			dto.Migrations = "unknown"
		case applied:
			dto.Migrations = "applied"
		default:
			dto.Migrations = "pending"
		}
	}
	if dto.Database != "ok" || dto.Migrations != "applied" {
		return h.respond(c, Reply{Status: fiber.StatusServiceUnavailable, Message: "Error: not ready", Data: dto})
	}
	return h.respond(c, Reply{Message: "ready", Data: dto})
}
