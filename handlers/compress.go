package handlers

import (
	"path"
	"strings"
	"sync"
	"sync/atomic"

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
// that do not shrink stay as they are), except those that carry a secret.
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

// staticEncodings keeps each static file compressed once per encoding, so
// that a file is not compressed again for every client that asks (the API
// reference's script is 4.3 MB: brotli takes a tenth of a second of CPU
// each time, which any caller could ask for over and over). An entry holds
// for the file's size and modification time: a file edited on disk in
// development is compressed again. One cache serves every Handlers of the
// process, since it is keyed by the file's bytes as they are on disk or
// embedded.
var staticEncoded staticEncodings

type staticEncodings struct {
	mu    sync.Mutex
	files map[string]encodedFile
	// made counts compressions, for tests.
	made atomic.Int64
}

type encodedFile struct {
	size, modTime int64
	body          []byte
}

// compressible are the static files worth compressing, by extension
// (images and fonts are compressed already).
var compressible = map[string]bool{".js": true, ".css": true, ".svg": true, ".json": true, ".map": true, ".txt": true, ".html": true}

// encode sets the answer c holds, a whole static file of size bytes
// modified at modTime, to its brotli or gzip form as the caller accepts,
// from the cache or compressed now. Other answers stay as they are (and
// compressAnswers compresses what it should).
func (s *staticEncodings) encode(c *fiber.Ctx, name string, size, modTime int64) {
	if c.Method() != fiber.MethodGet || c.Response().StatusCode() != fiber.StatusOK || size < 1024 || !compressible[strings.ToLower(path.Ext(name))] {
		return
	}
	encoding := ""
	switch {
	case c.Context().Request.Header.HasAcceptEncoding("br"):
		encoding = "br"
	case c.Context().Request.Header.HasAcceptEncoding("gzip"):
		encoding = "gzip"
	default:
		return
	}
	key := encoding + " " + name
	s.mu.Lock()
	f, ok := s.files[key]
	s.mu.Unlock()
	if !ok || f.size != size || f.modTime != modTime {
		plain := c.Response().Body()
		if int64(len(plain)) != size {
			return // not the whole file: leave it to compressAnswers
		}
		f = encodedFile{size: size, modTime: modTime}
		if encoding == "br" {
			f.body = fasthttp.AppendBrotliBytesLevel(nil, plain, fasthttp.CompressBrotliDefaultCompression)
		} else {
			f.body = fasthttp.AppendGzipBytesLevel(nil, plain, fasthttp.CompressDefaultCompression)
		}
		s.made.Add(1)
		s.mu.Lock()
		if s.files == nil {
			s.files = map[string]encodedFile{}
		}
		s.files[key] = f
		s.mu.Unlock()
	}
	c.Response().SetBodyRaw(f.body)
	c.Set(fiber.HeaderContentEncoding, encoding)
	c.Vary(fiber.HeaderAcceptEncoding)
}
