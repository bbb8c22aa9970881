package handlers

import (
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// carriesSecret tells the answers that hold a secret beside what the caller
// sent: a vault value, a session token, a new personal access token. They
// go uncompressed, so that no length of theirs depends on how well a guess
// matches the secret (BREACH). Pages carry only masked CSRF tokens.
func carriesSecret(c *fiber.Ctx) bool {
	switch c.Path() {
	case "/vault/fetch/one", "/vault/fetch", "/user/login", "/pat/create":
		return true
	}
	return false
}

// compressAnswers compresses every answer, error pages included, with
// brotli or gzip as the caller accepts (bodies under 200 bytes and media
// that do not shrink stay as they are), except those that carry a secret;
// static files come compressed already (static.Assets).
func (h *Handlers) compressAnswers() fiber.Handler {
	compress := fasthttp.CompressHandlerBrotliLevel(func(*fasthttp.RequestCtx) {},
		fasthttp.CompressBrotliDefaultCompression, fasthttp.CompressDefaultCompression)
	return func(c *fiber.Ctx) error {
		if err := c.Next(); err != nil {
			if err := h.ErrorHandler(c, err); err != nil {
				return err
			}
		}
		if c.Method() != fiber.MethodHead && !carriesSecret(c) {
			compress(c.Context())
		}
		return nil
	}
}
