package static

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/gofiber/fiber/v2"
)

// TestStaticCompressedOnce: a static file (the editor's script: the API
// reference's would take seconds under the race detector, for the same
// code) comes brotli- or gzip-encoded as
// the caller accepts, decoding to the file's bytes, and is compressed once
// per encoding however many ask; a HEAD and a caller that accepts neither
// get the file as it is.
func TestStaticCompressedOnce(t *testing.T) {
	a, err := NewAssets()
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	app.Use("/static", a.Handler(true))
	const path = "/static/js/editor.js"
	plain, err := fs.ReadFile(FS, "js/editor.js")
	if err != nil {
		t.Fatal(err)
	}
	get := func(method, encoding string) (*http.Response, []byte) {
		t.Helper()
		req := httptest.NewRequest(method, path, nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	// The cache is the process's: start from none for this file.
	before := encoded.made.Load()
	encoded.mu.Lock()
	delete(encoded.files, "br js/editor.js")
	delete(encoded.files, "gzip js/editor.js")
	encoded.mu.Unlock()
	for range 3 {
		for _, encoding := range []string{"br", "gzip"} {
			resp, body := get(http.MethodGet, encoding)
			var r io.Reader
			switch got := resp.Header.Get("Content-Encoding"); got {
			case "br":
				r = brotli.NewReader(bytes.NewReader(body))
			case "gzip":
				if r, err = gzip.NewReader(bytes.NewReader(body)); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("%s: Content-Encoding %q", encoding, got)
			}
			decoded, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(decoded, plain) || len(body) >= len(plain)/2 || !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/javascript") {
				t.Fatalf("%s: %d bytes decode to %d (%v), of %d; headers %v", encoding, len(body), len(decoded), err, len(plain), resp.Header)
			}
		}
	}
	if n := encoded.made.Load() - before; n != 2 {
		t.Errorf("6 answers compressed the file %d times, want once per encoding", n)
	}
	if resp, body := get(http.MethodGet, ""); resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, plain) {
		t.Errorf("without Accept-Encoding: %q, %d bytes", resp.Header.Get("Content-Encoding"), len(body))
	}
	if resp, body := get(http.MethodHead, "br"); resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("HEAD: %d, %d bytes", resp.StatusCode, len(body))
	}
}
