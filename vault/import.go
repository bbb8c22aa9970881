package vault

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"stencil/dotenv"
	"stencil/store"
)

// .env import and export (docs/vaults.md): a file is parsed as common .env
// parsers read it (dotenv.Parse: comments, export, single quotes taken
// literally, double quotes with JSON escapes; no $NAME expansion; lines of
// any length), its keys compared with the vault's, and applied in one
// transaction; the vault is exported as such a file (ExportEnv), which
// reads back the same values. Values are never part of an outcome.

// MaxImportKeys bounds the keys of one import.
const MaxImportKeys = 5000

// ImportRequest is an import of a .env file into project's vault:
// DeleteMissing removes the keys the file does not name, DryRun writes
// nothing (the outcome says what would happen). Check is the rule of a key
// and a value typed into the vault's form: why the pair cannot be saved,
// or "".
type ImportRequest struct {
	Project       string
	Env           string
	DeleteMissing bool
	DryRun        bool
	Check         func(key, value string) string
}

// ImportProblems is a file refused, by field: "env" for the file,
// "env.KEY" for a key or value that breaks the rules.
type ImportProblems map[string]string

func (p ImportProblems) Error() string { return "the file cannot be imported" }

// ImportOutcome is an import's outcome: keys only.
type ImportOutcome struct {
	Added     []string     `json:"added"`
	Changed   []string     `json:"changed"`
	Unchanged []string     `json:"unchanged"`
	Deleted   []string     `json:"deleted"`
	Invalid   []InvalidKey `json:"invalid"`
	Applied   bool         `json:"applied"`
}

// InvalidKey is a key of the file that cannot be imported, and why.
type InvalidKey struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// ErrImportConflict is an import a save of the vault overtook (a key
// created meanwhile): nothing was written.
var ErrImportConflict = errors.New("the vault changed while the file was imported (a key was created meanwhile); nothing was written: preview it again")

// ImportEnv compares the file with project's live entries and, unless a
// dry run, applies all of it at once, logged as by. A file that cannot be
// read, is empty, has too many keys or holds an invalid key or value is
// refused as ImportProblems and writes nothing.
func (v *Vault) ImportEnv(ctx context.Context, in ImportRequest, by store.VaultAccess) (ImportOutcome, error) {
	out := ImportOutcome{Added: []string{}, Changed: []string{}, Unchanged: []string{}, Deleted: []string{}, Invalid: []InvalidKey{}}
	refuse := func(msg string) error { return ImportProblems{"env": msg} }
	if strings.TrimSpace(in.Env) == "" {
		return out, refuse("is empty: paste a .env file or choose one")
	}
	parsed, err := dotenv.Parse(in.Env)
	if err != nil {
		return out, refuse("cannot be read as a .env file: " + err.Error())
	}
	if len(parsed) > MaxImportKeys {
		return out, refuse(fmt.Sprintf("has %d keys: at most %d can be imported at once", len(parsed), MaxImportKeys))
	}
	_, err = v.store.ImportVault(ctx, in.Project, by, v.versions, in.DryRun, func(live map[string]store.VaultEntry) (store.VaultImport, error) {
		return v.planImport(in, parsed, live, &out)
	})
	if errors.Is(err, errImportInvalid) {
		fields := ImportProblems{}
		for _, iv := range out.Invalid {
			fields["env."+iv.Key] = iv.Reason
		}
		return out, fields
	}
	if errors.Is(err, store.ErrConflict) {
		return out, ErrImportConflict
	}
	if err != nil {
		return out, err
	}
	out.Applied = !in.DryRun
	return out, nil
}

var errImportInvalid = errors.New("the file has invalid keys")

// planImport compares the parsed file with the live entries of the vault:
// out says what importing it adds, changes, leaves and deletes, and which
// keys are invalid; the import it returns is what to write (nothing on a
// dry run).
func (v *Vault) planImport(in ImportRequest, parsed map[string]string, live map[string]store.VaultEntry, out *ImportOutcome) (store.VaultImport, error) {
	var im store.VaultImport
	invalid := func(key, reason string) { out.Invalid = append(out.Invalid, InvalidKey{Key: key, Reason: reason}) }
	for _, k := range slices.Sorted(maps.Keys(parsed)) {
		value := parsed[k]
		if reason := in.Check(k, value); reason != "" {
			invalid(k, reason)
			continue
		}
		e, ok := live[k]
		if ok {
			old, err := v.Open(e)
			if err != nil {
				return im, err
			}
			im.Read = append(im.Read, k)
			if old == value {
				out.Unchanged = append(out.Unchanged, k)
				continue
			}
			out.Changed = append(out.Changed, k)
		} else {
			out.Added = append(out.Added, k)
		}
		if in.DryRun {
			continue
		}
		sealed, err := v.Seal(in.Project, k, value)
		if err != nil {
			return im, err
		}
		if ok {
			im.Change = append(im.Change, sealed)
		} else {
			im.Add = append(im.Add, sealed)
		}
	}
	if in.DeleteMissing {
		for k := range live {
			if _, ok := parsed[k]; !ok {
				out.Deleted = append(out.Deleted, k)
			}
		}
		slices.Sort(out.Deleted)
		im.Delete = out.Deleted
	}
	if len(out.Invalid) > 0 && !in.DryRun {
		return im, errImportInvalid
	}
	return im, nil
}

// ExportEnv is project's vault as a .env file (Export: every value read
// logged).
func (v *Vault) ExportEnv(ctx context.Context, project string, by store.VaultAccess) (string, error) {
	values, err := v.Export(ctx, project, by)
	if err != nil {
		return "", err
	}
	return dotenv.Format(values), nil
}
