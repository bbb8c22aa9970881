package store_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"stencil/store"
)

func TestSessionCodec(t *testing.T) {
	t.Parallel()
	var codec store.SessionCodec
	deadline := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	values := map[string]any{"uid": int64(7), "cv": int64(2), "csrf": "tok", "flash_kind": "success", "flash_text": "Saved <b>"}
	b, err := codec.Encode(deadline, values)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // map order varies from run to run; the bytes must not
		again, _ := codec.Encode(deadline, values)
		if !bytes.Equal(again, b) {
			t.Fatalf("the same session encoded differently:\n%s\n%s", b, again)
		}
	}
	gotDeadline, got, err := codec.Decode(b)
	if err != nil || !gotDeadline.Equal(deadline) || len(got) != len(values) {
		t.Fatalf("decode = %v %v (%v)", gotDeadline, got, err)
	}
	for k, v := range values {
		if got[k] != v {
			t.Fatalf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if _, err := codec.Encode(deadline, map[string]any{"n": 1.5}); err == nil || !strings.Contains(err.Error(), `"n"`) {
		t.Fatalf("a float must be refused, naming its key: %v", err)
	}
	if _, _, err := codec.Decode([]byte("\x0e\xff\x81")); err == nil {
		t.Fatal("bytes of another encoding must not decode")
	}
}
