package engine

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestSecretsEverySpelling: each spelling of the audit's two secrets, and
// a base64 text holding one at each offset, is masked; what is around it
// is kept.
func TestSecretsEverySpelling(t *testing.T) {
	for _, secret := range []string{"sk_live_Ab+cD/eF0gH1==", "p@ss w/rd+&=?#%é", "Sup3rS3cretValueXYZ", "tiny"} {
		var s Secrets
		s.Add(secret)
		html, _ := json.Marshal(secret)
		forms := map[string]string{
			"as is":               secret,
			"query":               url.QueryEscape(secret),
			"query, lower hex":    lowerHexTest.ReplaceAllStringFunc(url.QueryEscape(secret), strings.ToLower),
			"path":                url.PathEscape(secret),
			"component":           strings.ReplaceAll(url.QueryEscape(secret), "+", "%20"),
			"JSON":                string(html[1 : len(html)-1]),
			"base64":              base64.StdEncoding.EncodeToString([]byte(secret)),
			"base64 raw":          base64.RawStdEncoding.EncodeToString([]byte(secret)),
			"base64 URL":          base64.URLEncoding.EncodeToString([]byte(secret)),
			"base64 URL raw":      base64.RawURLEncoding.EncodeToString([]byte(secret)),
			"basic auth (:1)":     base64.StdEncoding.EncodeToString([]byte("u:" + secret)),
			"basic auth (:2)":     base64.StdEncoding.EncodeToString([]byte("us:" + secret)),
			"basic auth (:3)":     base64.StdEncoding.EncodeToString([]byte("usr:" + secret)),
			"JSON, ASCII only":    strings.ReplaceAll(string(html[1:len(html)-1]), "é", `\u00e9`),
			"JSON, slash escaped": strings.ReplaceAll(string(html[1:len(html)-1]), "/", `\/`),
		}
		for name, form := range forms {
			if len(secret) < 8 && strings.Contains(name, "basic auth") {
				continue // too short to find inside another text's encoding
			}
			got := s.Mask("before " + form + " after")
			if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") || !strings.Contains(got, Mask) {
				t.Errorf("%q, %s: %q", secret, name, got)
				continue
			}
			if strings.Contains(name, "basic auth") {
				continue // the encoding's edges, a byte or two, stay
			}
			if strings.Contains(got, form) {
				t.Errorf("%q, %s: %q", secret, name, got)
			}
		}
	}
}

var lowerHexTest = regexp.MustCompile(`%[0-9A-F]{2}`)

// TestSecretsMaskURL: a call's URL shows each part holding a secret
// replaced whole, the rest as sent.
func TestSecretsMaskURL(t *testing.T) {
	var s Secrets
	s.Add("sk_live_Ab+cD/eF0gH1==")
	s.Add("p@ss w/rd+&=?#%é")
	for raw, want := range map[string]string{
		"https://api.example.com/v1/charges?api_key=sk_live_Ab%2BcD%2FeF0gH1%3D%3D&n=1": "https://api.example.com/v1/charges?api_key=" + Mask + "&n=1",
		"https://api.example.com/v1?pw=p%40ss+w%2Frd%2B%26%3D%3F%23%25%C3%A9":           "https://api.example.com/v1?pw=" + Mask,
		"https://api.example.com/v1?pw=p%40ss+w%2frd%2b%26%3d%3f%23%25%c3%a9":           "https://api.example.com/v1?pw=" + Mask,
		"https://api.example.com/keys/sk_live_Ab+cD%2FeF0gH1==/use":                     "https://api.example.com/keys/" + Mask + "/use",
		"https://api.example.com/x?k=prefix-c2tfbGl2ZV9BYitjRC9lRjBnSDE9PQ":             "https://api.example.com/x?k=" + Mask,
		"https://api.example.com/plain?q=1#frag":                                        "https://api.example.com/plain?q=1#frag",
	} {
		if got := s.MaskURL(raw); got != want {
			t.Errorf("%s:\n got %s\nwant %s", raw, got, want)
		}
	}
}

// TestSecretsLongTextAsSent: a text past 64 KiB (a body sent upstream) is
// masked as it was sent, without its spellings.
func TestSecretsLongTextAsSent(t *testing.T) {
	var s Secrets
	long := strings.Repeat("a/b ", 20<<10)
	s.Add(long)
	if len(s.forms) != 1 || s.Mask("x"+long+"y") != "x"+Mask+"y" {
		t.Fatalf("%d forms", len(s.forms))
	}
}
