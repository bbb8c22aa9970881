package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
