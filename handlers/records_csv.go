package handlers

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/schema"
	"stencil/store"
)

// CSV in and out of a collection (docs/collections.md, "CSV").

// Limits of an import.
const (
	importMaxRows  = 100_000
	importMaxBytes = 10 << 20
)

type recordExportQuery struct {
	ProjectID    string `query:"project_id" json:"project_id" validate:"required"`
	CollectionID string `query:"collection_id" json:"collection_id" validate:"required"`
	Format       string `query:"format" json:"format" validate:"required,oneof=csv"`
}

// recordExport answers GET /data/export?format=csv: a header row of the
// fields in their order, then the other properties in the order records
// first hold them; a row a record, in id order, written as it is read.
func (h *Handlers) recordExport(c *fiber.Ctx) error {
	var q recordExportQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	ctx := c.UserContext()
	col, err := h.store.Collection(ctx, q.ProjectID, q.CollectionID)
	if err != nil {
		return collectionMissing(err, q.CollectionID)
	}
	others, err := h.store.RecordKeys(ctx, q.ProjectID, q.CollectionID)
	if err != nil {
		return err
	}
	var columns []string
	for _, f := range col.Schema.Fields {
		columns = append(columns, f.Name)
	}
	for _, k := range others {
		if _, ok := col.Schema.Field(k); !ok {
			columns = append(columns, k)
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(columns); err != nil {
		return err
	}
	cells := make([]string, len(columns))
	err = h.store.EachRecord(ctx, q.ProjectID, q.CollectionID, func(id int64, data []byte) error {
		var props map[string]json.RawMessage
		if err := json.Unmarshal(data, &props); err != nil {
			return err
		}
		for i, name := range columns {
			cells[i] = schema.Cell(props[name])
		}
		return w.Write(cells)
	})
	if err != nil {
		return err
	}
	w.Flush()
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+url.PathEscape(q.CollectionID)+`.csv"`)
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	return c.Send(buf.Bytes())
}

type recordImportQuery struct {
	ProjectID    string `query:"project_id" json:"project_id" validate:"required"`
	CollectionID string `query:"collection_id" json:"collection_id" validate:"required"`
}

// importProblem is one problem of a refused import, as the answer lists
// it: its line of the CSV (the header is line 1) and its column.
type importProblem struct {
	Line    int    `json:"line"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p importProblem) String() string {
	if p.Field == "" {
		return fmt.Sprintf("line %d: %s", p.Line, p.Message)
	}
	return fmt.Sprintf("line %d, %s: %s", p.Line, p.Field, p.Message)
}

// recordImport answers POST /data/import: the body is CSV with a header
// row, each row a record whose cells are read by the fields' types; every
// record is checked as a create checks one, and all are written or none
// (201, data: {created}); 422 lists up to 20 problems by line and field.
func (h *Handlers) recordImport(c *fiber.Ctx) error {
	var q recordImportQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if mediaType(c) != "text/csv" {
		return fiber.NewError(fiber.StatusUnsupportedMediaType, "send the records as text/csv, with a header row")
	}
	ctx := c.UserContext()
	col, err := h.store.Collection(ctx, q.ProjectID, q.CollectionID)
	if err != nil {
		return collectionMissing(err, q.CollectionID)
	}
	docs, lines, problems, err := readCSV(c.Body(), col.Schema)
	if err != nil {
		return err
	}
	// The rows the CSV gave records of are checked as records, whatever
	// problems other rows had: the answer names them all.
	prepared, found, err := h.store.PrepareImport(ctx, q.ProjectID, q.CollectionID, docs)
	if err != nil {
		return collectionMissing(err, q.CollectionID)
	}
	for _, p := range found {
		msg := p.Message
		if p.Twin >= 0 {
			msg += fmt.Sprintf(": line %d holds it too", lines[p.Twin])
		}
		problems = append(problems, importProblem{Line: lines[p.At], Field: p.Field, Message: msg})
	}
	if len(problems) == 0 {
		n, err := h.store.ImportRecords(ctx, q.ProjectID, q.CollectionID, prepared)
		if err != nil {
			return collectionMissing(err, q.CollectionID)
		}
		return h.respond(c, Reply{Status: fiber.StatusCreated, Message: fmt.Sprintf("%d records imported", n),
			Data: fiber.Map{"created": n}, Event: dataChanged, Redirect: collectionURL(q.ProjectID, q.CollectionID)})
	}
	slices.SortStableFunc(problems, func(a, b importProblem) int { return cmp.Compare(a.Line, b.Line) })
	if len(problems) > store.MaxImportProblems {
		problems = problems[:store.MaxImportProblems]
	}
	words := make([]string, len(problems))
	for i, p := range problems {
		words[i] = p.String()
	}
	return &importRefused{problems: problems, message: fmt.Sprintf("the CSV was not imported: %s", strings.Join(words, "; "))}
}

// importRefused is an import refused for its records' problems (422).
type importRefused struct {
	problems []importProblem
	message  string
}

func (e *importRefused) Error() string { return e.message }

// readCSV reads CSV text into records' data by the header's columns,
// converting each cell by its field's type, and gives each record's line;
// problems of the text itself (the header, a cell a type cannot read, a
// row too many) come back as problems, at most store.MaxImportProblems.
func readCSV(text []byte, sch schema.Schema) ([][]byte, []int, []importProblem, error) {
	if len(text) > importMaxBytes {
		return nil, nil, nil, fiber.NewError(fiber.StatusRequestEntityTooLarge, "the CSV is over 10 MiB: import it in parts")
	}
	r := csv.NewReader(bytes.NewReader(text))
	r.ReuseRecord = false
	var problems []importProblem
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, []importProblem{{Line: 1, Message: "the CSV is empty: it needs a header row naming the columns"}}, nil
	}
	if err != nil {
		return nil, nil, []importProblem{{Line: 1, Message: csvError(err)}}, nil
	}
	fields := make([]schema.Field, len(header))
	seen := map[string]bool{}
	for i, name := range header {
		f, ok := sch.Field(name)
		switch {
		case name == "":
			problems = append(problems, importProblem{Line: 1, Message: fmt.Sprintf("column %d has no name", i+1)})
		case seen[name]:
			problems = append(problems, importProblem{Line: 1, Field: name, Message: "names a column twice"})
		case !ok && sch.Strict:
			problems = append(problems, importProblem{Line: 1, Field: name, Message: "is not a field of this collection"})
		case !ok:
			f = schema.Field{Name: name}
		}
		seen[name] = true
		fields[i] = f
	}
	if len(problems) > 0 {
		return nil, nil, problems, nil
	}
	var docs [][]byte
	var lines []int
	rows := 0
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			problems = append(problems, importProblem{Line: line, Message: csvError(err)})
			if len(problems) >= store.MaxImportProblems {
				break
			}
			continue
		}
		if rows++; rows > importMaxRows {
			return nil, nil, nil, fiber.NewError(fiber.StatusRequestEntityTooLarge, fmt.Sprintf("the CSV has over %d rows: import it in parts", importMaxRows))
		}
		props := make(map[string]json.RawMessage, len(row))
		bad := false
		for i, cell := range row {
			v, msg := schema.FromCell(fields[i], cell)
			if msg != "" {
				problems = append(problems, importProblem{Line: line, Field: fields[i].Name, Message: msg})
				bad = true
				continue
			}
			if v != nil {
				props[fields[i].Name] = v
			}
		}
		if bad {
			continue // its record is not checked: its cells are wrong
		}
		doc, err := json.Marshal(props)
		if err != nil {
			return nil, nil, nil, err
		}
		docs, lines = append(docs, doc), append(lines, line)
		if len(problems) >= store.MaxImportProblems {
			break
		}
	}
	if len(docs) == 0 && len(problems) == 0 && rows == 0 {
		problems = append(problems, importProblem{Line: 2, Message: "the CSV has no records below its header"})
	}
	return docs, lines, problems, nil
}

// csvError says what encoding/csv found, without its position (the line
// is the problem's own).
func csvError(err error) string {
	var perr *csv.ParseError
	if errors.As(err, &perr) {
		return "is not valid CSV: " + perr.Err.Error()
	}
	return "is not valid CSV"
}

type typedRecordInput struct {
	ProjectID    string `form:"project_id" validate:"required"`
	CollectionID string `form:"collection_id" validate:"required"`
}

// datetimeLocal is what a browser's datetime-local input gives: a time
// without its zone, read as UTC.
var datetimeLocal = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$`)

// recordFormCreate answers POST /web/data/record: a typed collection's
// new record from its page's form, one input a field ("data.<name>"),
// each read as a CSV cell of its type is (schema.FromCell); a problem
// stands beside its input.
func (h *Handlers) recordFormCreate(c *fiber.Ctx) error {
	var in typedRecordInput
	if err := bind(c, &in); err != nil {
		return err
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	col, err := h.store.Collection(ctx, in.ProjectID, in.CollectionID)
	if err != nil {
		return collectionMissing(err, in.CollectionID)
	}
	view := recordsView{Base: h.base(c, ""), Project: p, Collection: col, CanWrite: true, Self: collectionURL(p.ID, col.ID)}
	formError := func(err error) error {
		return h.formError(c, err, func() (Reply, *Form, error) {
			return Reply{Page: "data/collection", Fragment: "data/record_form", View: &view}, &view.Form, nil
		})
	}
	props := map[string]json.RawMessage{}
	args := c.Context().PostArgs()
	for _, f := range col.Schema.Fields {
		name := "data." + f.Name
		values := args.PeekMulti(name)
		if len(values) == 0 {
			continue
		}
		var v json.RawMessage
		msg := ""
		switch {
		case f.Type == schema.Select && f.Multiple:
			list := []string{}
			for _, b := range values {
				if len(b) > 0 {
					list = append(list, string(b))
				}
			}
			if len(list) > 0 {
				v, _ = json.Marshal(list)
			}
		default:
			// A checkbox sends its hidden "false", then "true" when checked.
			cell := string(values[len(values)-1])
			if f.Type == schema.Datetime && datetimeLocal.MatchString(cell) {
				if len(cell) == len("2006-01-02T15:04") {
					cell += ":00"
				}
				cell += "Z"
			}
			v, msg = schema.FromCell(f, cell)
		}
		if msg != "" {
			return formError(&ValidationError{Fields: map[string]string{name: msg}})
		}
		if v != nil {
			props[f.Name] = v
		}
	}
	data, err := json.Marshal(props)
	if err != nil {
		return err
	}
	r := store.Record{ProjectID: p.ID, CollectionID: col.ID, Data: data}
	if err := h.store.CreateRecord(ctx, &r); err != nil {
		var taken *schema.Violation
		if errors.As(err, &taken) && taken.Conflict {
			err = &ValidationError{Fields: map[string]string{"data." + taken.Field: taken.Message}}
		}
		return formError(collectionMissing(err, col.ID))
	}
	fresh := recordsView{Base: h.base(c, ""), Project: p, Collection: col, CanWrite: true}
	h.flash(c, "success", fmt.Sprintf("Record %d created.", r.ID))
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Record created", Data: newRecordDTO(r),
		Fragment: "data/record_form", View: fresh, Event: dataChanged, Redirect: collectionURL(p.ID, col.ID)})
}
