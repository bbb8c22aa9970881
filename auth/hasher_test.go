package auth

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestHasherSlots: hashes beyond the slots wait, then give up with
// ErrBusy; the watcher follows every start and end.
func TestHasherSlots(t *testing.T) {
	h := NewHasher(PasswordParams{Memory: 1024, Time: 1, Threads: 1}, 2, 30*time.Millisecond)
	var mu sync.Mutex
	var seen []int64
	h.Watch(func(n int64, ended bool) {
		mu.Lock()
		seen = append(seen, n)
		mu.Unlock()
	})
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Do(context.Background(), func() { <-release }); err != nil {
				t.Error(err)
			}
		}()
	}
	for h.InFlight() < 2 {
		time.Sleep(time.Millisecond)
	}
	if err := h.Do(context.Background(), func() { t.Error("ran without a slot") }); !errors.Is(err, ErrBusy) {
		t.Fatalf("a third hash: %v", err)
	}
	close(release)
	wg.Wait()
	hash, err := h.Hash(context.Background(), "pw")
	if err != nil || CheckPassword("pw", hash) != nil {
		t.Fatalf("hash after the slots freed: %v", err)
	}
	if h.InFlight() != 0 || len(seen) != 6 || seen[len(seen)-1] != 0 {
		t.Fatalf("watched %v, %d in flight", seen, h.InFlight())
	}
	if d := h.Decoy(); d == "" || d != h.Decoy() {
		t.Fatal("the decoy is made once")
	}
}
