package webhooks

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// headersOf reads a map as a request's headers: by name, in any case.
func headersOf(m map[string]string) func(string) string {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h.Get
}

func mismatched(t *testing.T, err error, what string) {
	t.Helper()
	var m *Mismatch
	if !errors.As(err, &m) || err.Error() != "signature does not match" {
		t.Fatalf("%s: got %v, want a mismatch", what, err)
	}
}

// The providers' published test vectors: Standard Webhooks' (its
// specification's example delivery) and GitHub's ("Validating webhook
// deliveries", its test values).
func TestPublishedVectors(t *testing.T) {
	body := []byte(`{"test": 2432232314}`)
	std := headersOf(map[string]string{"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
		"webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="})
	at := time.Unix(1614265330, 0).Add(10 * time.Second)
	id, err := Verify(StandardWebhooks, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "", std, body, at, DefaultTolerance)
	if err != nil || id != "msg_p5jXN8AQM9LWM0D4loKWxJek" {
		t.Fatalf("Standard Webhooks' vector: %q %v", id, err)
	}
	gh := headersOf(map[string]string{"X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"})
	if _, err := Verify(GitHub, "It's a Secret to Everybody", "", gh, []byte("Hello, World!"), at, DefaultTolerance); err != nil {
		t.Fatalf("GitHub's vector: %v", err)
	}
	mismatched(t, func() error {
		_, err := Verify(GitHub, "It's a Secret to Everybody", "", gh, []byte("Hello, World?"), at, DefaultTolerance)
		return err
	}(), "GitHub's vector with another body")
}

// Each scheme: a delivery signed as its sender signs it holds; one signed
// with another secret, with another body, with an expired or future
// timestamp, or without its headers does not.
func TestSchemes(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	body := []byte(`{"type":"invoice.paid","id":"evt_1"}`)
	for _, scheme := range Schemes {
		secret := "whsec_c2VjcmV0LW9mLXRoZS1yb3V0ZQ=="
		t.Run(scheme, func(t *testing.T) {
			verify := func(h map[string]string, body []byte, at time.Time) (string, error) {
				return Verify(scheme, secret, "X-Signature", headersOf(h), body, at, DefaultTolerance)
			}
			signed := Sign(scheme, secret, "X-Signature", "msg_1", body, now)
			id, err := verify(signed, body, now.Add(4*time.Minute))
			if err != nil {
				t.Fatalf("a signed delivery: %v", err)
			}
			if (scheme == StandardWebhooks) != (id == "msg_1") {
				t.Fatalf("the delivery's id: %q", id)
			}
			_, err = verify(Sign(scheme, "whsec_b3RoZXItc2VjcmV0", "X-Signature", "msg_1", body, now), body, now)
			mismatched(t, err, "another secret")
			_, err = verify(signed, append([]byte(" "), body...), now)
			mismatched(t, err, "another body")
			_, err = verify(map[string]string{}, body, now)
			mismatched(t, err, "no headers")
			for k, v := range signed {
				broken := map[string]string{}
				for k2, v2 := range signed {
					broken[k2] = v2
				}
				broken[k] = v[:len(v)-2] + "zz"
				_, err = verify(broken, body, now)
				mismatched(t, err, "a header changed: "+k)
			}
			if scheme == StandardWebhooks || scheme == Stripe {
				_, err = verify(signed, body, now.Add(6*time.Minute))
				mismatched(t, err, "an expired timestamp")
				_, err = verify(signed, body, now.Add(-6*time.Minute))
				mismatched(t, err, "a timestamp from the future")
			}
		})
	}
}

// Standard Webhooks' header may hold several signatures (a secret being
// rotated) and versions other than v1, which are passed over.
func TestStandardWebhooksSeveralSignatures(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{}`)
	good := Sign(StandardWebhooks, "new-secret", "", "msg_2", body, now)["webhook-signature"]
	h := headersOf(map[string]string{"webhook-id": "msg_2", "webhook-timestamp": "1800000000",
		"webhook-signature": "v1a,abc v1,bm90LXRoaXMtb25l " + good})
	if _, err := Verify(StandardWebhooks, "new-secret", "", h, body, now, DefaultTolerance); err != nil {
		t.Fatal(err)
	}
	// Stripe too: a v1 of an old secret beside the new one's.
	stripe := Sign(Stripe, "whsec_new", "", "", body, now)["Stripe-Signature"]
	h = headersOf(map[string]string{"Stripe-Signature": stripe + ",v1=00ff,v0=abc"})
	if _, err := Verify(Stripe, "whsec_new", "", h, body, now, DefaultTolerance); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkVerify is the check's cost per delivery of a 1 KiB body, by
// scheme (docs/webhooks.md; make bench).
func BenchmarkVerify(b *testing.B) {
	body := []byte(`{"data":"` + strings.Repeat("x", 1000) + `"}`)
	now := time.Unix(1_800_000_000, 0)
	for _, scheme := range Schemes {
		h := headersOf(Sign(scheme, "whsec_c2VjcmV0LW9mLXRoZS1yb3V0ZQ==", "X-Signature", "msg_1", body, now))
		b.Run(scheme, func(b *testing.B) {
			for b.Loop() {
				if _, err := Verify(scheme, "whsec_c2VjcmV0LW9mLXRoZS1yb3V0ZQ==", "X-Signature", h, body, now, DefaultTolerance); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStandardWebhooksLongID: a delivery whose webhook-id is longer than
// the replay check keeps is refused as a signature that does not match,
// however well signed (it was an error of the service, a 500).
func TestStandardWebhooksLongID(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{}`)
	for n, ok := range map[int]bool{MaxDeliveryID: true, MaxDeliveryID + 1: false} {
		id := strings.Repeat("é", n)
		h := headersOf(Sign(StandardWebhooks, "whsec_c2VjcmV0", "", id, body, now))
		got, err := Verify(StandardWebhooks, "whsec_c2VjcmV0", "", h, body, now, DefaultTolerance)
		if ok && (err != nil || got != id) {
			t.Fatalf("an id of %d characters: %q %v", n, got, err)
		}
		if !ok {
			mismatched(t, err, "an id of "+strconv.Itoa(n)+" characters")
		}
	}
}
