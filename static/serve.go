package static

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/valyala/fasthttp"
)

// Assets versions static URLs by content hash, so that they can be kept a
// year and still change on deploy, and serves the files (docs/operations.md,
// "Caching").
type Assets struct {
	version map[string]string
}

// NewAssets hashes every served file.
func NewAssets() (*Assets, error) {
	a := &Assets{version: map[string]string{}}
	err := fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(FS, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a.version[path] = hex.EncodeToString(sum[:6])
		return nil
	})
	return a, err
}

// URL returns the versioned URL of a file under static/.
func (a *Assets) URL(path string) (template.URL, error) {
	v, ok := a.version[strings.TrimPrefix(path, "/")]
	if !ok {
		return "", errors.New("no static file " + path)
	}
	return template.URL("/static/" + path + "?v=" + v), nil
}

// Handler serves the files under /static. Pages link each file with its
// content hash (?v=, see URL): such a URL always means the same bytes, so
// in production it may be kept for a year without asking again; any other
// URL of a file is checked on every use. In development with the folder
// present, files come from disk and are never kept, so edits show on
// reload. Text files come compressed as the caller accepts, each
// compressed once (encoded).
func (a *Assets) Handler(production bool) fiber.Handler {
	var root fs.FS = FS
	fromDisk := false
	if st, err := os.Stat("static"); !production && err == nil && st.IsDir() {
		root, fromDisk = os.DirFS("static"), true
	}
	serve := filesystem.New(filesystem.Config{Root: http.FS(root)})
	return func(c *fiber.Ctx) error {
		if err := serve(c); err != nil {
			return err
		}
		path := strings.TrimPrefix(c.Path(), "/static/")
		if st, err := fs.Stat(root, path); err == nil {
			encoded.encode(c, path, st.Size(), st.ModTime().UnixNano())
		}
		switch {
		case c.Response().StatusCode() != fiber.StatusOK:
		case fromDisk:
			c.Set(fiber.HeaderCacheControl, "no-store")
		case c.Query("v") != "" && c.Query("v") == a.version[path]:
			c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
		default:
			c.Set(fiber.HeaderCacheControl, "no-cache")
		}
		return nil
	}
}

// encoded keeps each static file compressed once per encoding, so that a
// file is not compressed again for every client that asks (the API
// reference's script is 4.3 MB: brotli takes a tenth of a second of CPU
// each time, which any caller could ask for over and over). An entry holds
// for the file's size and modification time: a file edited on disk in
// development is compressed again. One cache serves the whole process,
// since it is keyed by the file's bytes as they are on disk or embedded.
var encoded encodings

type encodings struct {
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
// from the cache or compressed now. Other answers stay as they are (the
// HTTP layer compresses what it should).
func (s *encodings) encode(c *fiber.Ctx, name string, size, modTime int64) {
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
			return // not the whole file: leave it to the HTTP layer
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
