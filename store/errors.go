package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"stencil/schema"
)

// ErrNotFound means the addressed row does not exist (or is not visible to
// the caller).
var ErrNotFound = errors.New("not found")

// ErrStale means a conditional write found its row changed since it was
// read.
var ErrStale = errors.New("changed since it was read")

// ErrTooLarge means a read of a route's run passed RunReadMaxBytes.
var ErrTooLarge = errors.New("the read passes its limit of bytes")

// ConflictError reports a unique-constraint violation; Constraint names the
// constraint, which handlers map to the field that must change.
type ConflictError struct {
	Constraint string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("conflict on %s", e.Constraint)
}

// ErrConflict matches any *ConflictError with errors.Is.
var ErrConflict = errors.New("conflict")

// Is makes errors.Is(err, ErrConflict) true for every ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// translate turns driver errors into the store's sentinel errors.
func translate(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return &ConflictError{Constraint: pgErr.ConstraintName}
	}
	return err
}

// Retryable says whether err ended a transaction that may succeed when run
// again from its start: a serialization failure (40001), a deadlock
// (40P01) or a row lock not had in time (55P03).
func Retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01" || pgErr.Code == "55P03")
}

// Unavailable reports an error of work that got no database time: no
// connection before its deadline, a statement stopped by the deadline or by
// PostgreSQL's timeouts, or a server that cannot be reached.
func Unavailable(err error) bool {
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &connErr), errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, new(*net.OpError)):
		return true
	case errors.As(err, &pgErr):
		// query_canceled (statement_timeout), lock_not_available (lock_timeout),
		// and the classes of a server going away.
		return pgErr.Code == "57014" || pgErr.Code == "55P03" || strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01"
	}
	return false
}

// wrap gives an error of the database the store operation it came from
// and the names it was about (a project, a key — never a value), so that
// a log line says where it failed. The store's own errors, which callers
// match and word for people, pass as they are.
func wrap(err *error, op string, names ...string) {
	if *err == nil || own(*err) {
		return
	}
	if len(names) > 0 {
		op += " " + strings.Join(names, "/")
	}
	*err = fmt.Errorf("%s: %w", op, *err)
}

// own says whether err is one of the store's own errors.
func own(err error) bool {
	var earlier *EarlierRunError
	var refused *FieldsRefused
	var violation *schema.Violation
	if errors.As(err, &refused) || errors.As(err, &violation) {
		return true
	}
	for _, e := range []error{ErrNotFound, ErrStale, ErrTooLarge, ErrConflict, ErrEmailState, ErrTokenGone, ErrLastRoot, ErrLastAdmin, ErrAlreadySetUp} {
		if errors.Is(err, e) {
			return true
		}
	}
	return errors.As(err, &earlier)
}
