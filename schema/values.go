package schema

import (
	"net/url"
	"strings"
	"time"

	"github.com/go-playground/validator/v10"
)

// emails checks addresses as the accounts' forms do (the validator's
// "email" rule), so an address one part of Stencil takes another does
// too.
var emails = validator.New()

// EmailAddress says whether s is an email address a field of type email
// takes: at most 254 characters, one line.
func EmailAddress(s string) bool {
	return !strings.ContainsAny(s, "\r\n") && emails.Var(s, "required,email,max=254") == nil
}

// Timestamp says whether s is an RFC 3339 date-time.
func Timestamp(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// WebURL says whether s is an absolute http or https URL with a host.
func WebURL(s string) bool {
	if len(s) > 2048 || strings.ContainsAny(s, " \r\n\t") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
