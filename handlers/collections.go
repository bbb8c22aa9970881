package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/schema"
	"stencil/store"
	"stencil/views"
)

// collectionDTO is a collection as the API shows it (docs/collections.md).
type collectionDTO struct {
	ProjectID   string `json:"project_id"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	RecordCount int    `json:"record_count"`
	// Fields and Additional are the collection's schema: no fields and
	// additional true for an untyped one.
	Fields     []schema.Field `json:"fields"`
	Additional bool           `json:"additional"`
	CreatedBy  *int64         `json:"created_by"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

func newCollectionDTO(c store.Collection) collectionDTO {
	fields := c.Schema.Fields
	if fields == nil {
		fields = []schema.Field{}
	}
	return collectionDTO{ProjectID: c.ProjectID, ID: c.ID, Name: c.Name, Description: c.Description, RecordCount: c.Records,
		Fields: fields, Additional: !c.Schema.Strict, CreatedBy: c.CreatedBy, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// recordDTO is a record as the API shows it: its id a number, its data the
// stored object.
type recordDTO struct {
	ID           int64           `json:"id"`
	ProjectID    string          `json:"project_id"`
	CollectionID string          `json:"collection_id"`
	Data         json.RawMessage `json:"data"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

func newRecordDTO(r store.Record) recordDTO {
	return recordDTO{ID: r.ID, ProjectID: r.ProjectID, CollectionID: r.CollectionID, Data: r.Data, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

type collectionInput = authoring.Collection

type collectionUpdateInput struct {
	ProjectID   string         `json:"project_id" form:"project_id" validate:"required"`
	ID          string         `json:"id" form:"id" validate:"required"`
	Name        *string        `json:"name" form:"name" validate:"omitnil,min=1,max=100"`
	Description *string        `json:"description" form:"description" validate:"omitnil,max=1000"`
	Fields      []schema.Field `json:"fields" form:"-"`
	Additional  *bool          `json:"additional" form:"-"`
	// Backfill fills new fields into the records that lack them: field →
	// value.
	Backfill map[string]json.RawMessage `json:"backfill" form:"-"`
	// Rename gives fields new names with their values: old name → new
	// name (the new one in Fields, the old one not).
	Rename map[string]string `json:"rename" form:"-"`
}

type collectionQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	ID        string `query:"id" json:"id" validate:"required"`
}

type collectionListQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
}

// jsonText is JSON as a request carries it (a record's data, a project's
// file): a JSON value in a JSON body, or the JSON text of a form's field.
type jsonText []byte

func (d *jsonText) UnmarshalJSON(b []byte) error {
	*d = append((*d)[:0], b...)
	return nil
}

func (d *jsonText) UnmarshalText(b []byte) error {
	*d = append((*d)[:0], b...)
	return nil
}

type recordInput struct {
	ProjectID    string   `json:"project_id" form:"project_id" validate:"required"`
	CollectionID string   `json:"collection_id" form:"collection_id" validate:"required"`
	Data         jsonText `json:"data" form:"data" validate:"required"`
}

type recordUpdateInput struct {
	recordInput
	ID int64 `json:"id" form:"id" validate:"required,min=1"`
}

type recordQuery struct {
	ProjectID    string `query:"project_id" json:"project_id" validate:"required"`
	CollectionID string `query:"collection_id" json:"collection_id" validate:"required"`
	ID           int64  `query:"id" json:"id" validate:"required"`
}

type recordListQuery struct {
	listQuery
	ProjectID    string `query:"project_id" json:"project_id" validate:"required"`
	CollectionID string `query:"collection_id" json:"collection_id" validate:"required"`
	Where        string `query:"where" json:"where" validate:"max=10000"`
	// Filter and Sort are the typed list's (docs/collections.md): a JSON
	// array of [field, op, value], and a field led by - for descending.
	Filter string `query:"filter" json:"filter" validate:"max=10000"`
	Sort   string `query:"sort" json:"sort" validate:"max=200"`
	// After starts the page after that record id: a next page however
	// deep, read as the first is (the answer's next link carries it).
	After int64             `query:"after" json:"after" validate:"min=0"`
	order store.RecordOrder // the page's column sort
}

// collectionsURL and collectionURL are the data pages.
func collectionsURL(project string) string { return "/web/data?project_id=" + url.QueryEscape(project) }

func collectionURL(project, id string) string {
	return "/web/data/collection?project_id=" + url.QueryEscape(project) + "&id=" + url.QueryEscape(id)
}

// dataChanged is the event after which a data page's table reloads itself.
const dataChanged = "data-changed"

type collectionsView struct {
	Base
	Project     store.Project
	Collections []store.Collection
	Pager       Pager
	Form        Form
	CanManage   bool // ADMIN and ROOT members create, rename and delete collections
}

type dataProjectsView struct {
	Base
	Projects []store.Project
	Pager    Pager
}

// dataIndex renders /web/data: with project_id, the project's collections;
// without, the caller's projects to choose from.
func (h *Handlers) dataIndex(c *fiber.Ctx) error {
	if c.Query("project_id") != "" {
		return h.collectionList(c)
	}
	var q listQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	page := q.page(20)
	projects, total, err := h.store.ListProjects(c.UserContext(), current(c).User.ID, false, page)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Page: "data/projects", View: dataProjectsView{Base: h.base(c, "Data"), Projects: projects,
		Pager: newPager(c, page, len(projects), total)}})
}

// collectionList answers GET /collection/fetch and renders /web/data.
func (h *Handlers) collectionList(c *fiber.Ctx) error {
	var q collectionListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	view, err := h.collectionsPage(c, q.ProjectID, q.page(defaultLimit(c, 25)))
	if err != nil {
		return err
	}
	dtos := make([]collectionDTO, len(view.Collections))
	for i, col := range view.Collections {
		dtos[i] = newCollectionDTO(col)
	}
	return h.respond(c, Reply{Data: dtos, Amount: &view.Pager.Total, Page: "data/index", View: view})
}

func (h *Handlers) collectionsPage(c *fiber.Ctx, project string, page store.Page) (collectionsView, error) {
	p, err := h.member(c, project)
	if err != nil {
		return collectionsView{}, err
	}
	list, total, err := h.store.ListCollections(c.UserContext(), p.ID, page)
	return collectionsView{Base: h.base(c, "Data · "+p.Name), Project: p, Collections: list, Pager: newPager(c, page, len(list), total),
		CanManage: canIn(c, p, store.RoleAdmin)}, err
}

// collectionShow answers GET /collection/fetch/one.
func (h *Handlers) collectionShow(c *fiber.Ctx) error {
	var q collectionQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	col, err := h.store.Collection(c.UserContext(), q.ProjectID, q.ID)
	if err != nil {
		return collectionMissing(err, q.ID)
	}
	return h.respond(c, Reply{Data: newCollectionDTO(col)})
}

// collectionMissing names the collection a not-found error is about.
func collectionMissing(err error, id string) error {
	return notFound(err, "collection "+authoring.Quote(id)+" not found")
}

// collectionCreate answers POST /collection/create.
func (h *Handlers) collectionCreate(c *fiber.Ctx) error {
	var in collectionInput
	if err := bind(c, &in); err != nil {
		return h.collectionFormError(c, err, in.ProjectID)
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	sch, err := authoring.Schema(c.UserContext(), h.store, &in, schema.Schema{})
	if err != nil {
		return h.collectionFormError(c, err, in.ProjectID)
	}
	col := store.Collection{ProjectID: in.ProjectID, ID: in.ID, Name: in.Name, Description: in.Description, Schema: sch}
	if err := h.store.CreateCollection(c.UserContext(), &col, current(c).User.ID); err != nil {
		return h.collectionFormError(c, err, in.ProjectID)
	}
	h.flash(c, "success", "Collection "+col.ID+" created.")
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Collection created", Data: newCollectionDTO(col),
		Redirect: collectionURL(col.ProjectID, col.ID)})
}

// collectionFormError answers a failed create with the page's form and its
// errors.
func (h *Handlers) collectionFormError(c *fiber.Ctx, err error, project string) error {
	if project == "" {
		return err
	}
	return h.formError(c, err, func() (Reply, *Form, error) {
		view, err := h.collectionsPage(c, project, store.Page{Limit: 25})
		return Reply{Page: "data/index", Fragment: "data/create", View: &view}, &view.Form, err
	})
}

// collectionUpdate answers PATCH /collection/update: the name and the
// description (the id stays).
func (h *Handlers) collectionUpdate(c *fiber.Ctx) error {
	var in collectionUpdateInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	col, err := h.store.Collection(c.UserContext(), in.ProjectID, in.ID)
	if err != nil {
		return collectionMissing(err, in.ID)
	}
	given := authoring.Collection{ProjectID: col.ProjectID, ID: col.ID, Fields: in.Fields, Additional: in.Additional}
	next, err := authoring.Schema(c.UserContext(), h.store, &given, col.Schema)
	if err == nil && len(in.Backfill) > 0 {
		err = authoring.Backfill(next, in.Backfill)
	}
	if err == nil && len(in.Rename) > 0 {
		err = authoring.Rename(col.Schema, next, in.Rename)
	}
	if err != nil {
		return err
	}
	col.Name, col.Description = authoring.Deref(in.Name, col.Name), authoring.Deref(in.Description, col.Description)
	if next.Hash() != col.Schema.Hash() || len(in.Backfill) > 0 {
		// One change, one event: the name with the fields.
		err := h.store.UpdateCollectionFields(c.UserContext(), &col, next, store.FieldsChange{Rename: in.Rename, Backfill: in.Backfill})
		if errors.Is(err, store.ErrStale) {
			return fiber.NewError(fiber.StatusConflict, "the fields of collection "+col.ID+" changed meanwhile: read them again")
		}
		if err != nil {
			return collectionMissing(err, in.ID)
		}
	} else if err := h.store.UpdateCollection(c.UserContext(), &col); err != nil {
		return collectionMissing(err, in.ID)
	}
	h.flash(c, "success", "Collection "+col.ID+" updated.")
	return h.respond(c, Reply{Message: "Collection updated", Data: newCollectionDTO(col), Event: dataChanged,
		Redirect: collectionURL(col.ProjectID, col.ID)})
}

// collectionDelete answers DELETE /collection/delete: the collection and
// every record in it.
func (h *Handlers) collectionDelete(c *fiber.Ctx) error {
	var q collectionQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.DeleteCollection(c.UserContext(), q.ProjectID, q.ID); err != nil {
		return collectionMissing(err, q.ID)
	}
	h.flash(c, "success", "Collection "+q.ID+" deleted with its records.")
	return h.respond(c, Reply{Message: "Collection deleted", Redirect: collectionsURL(q.ProjectID)})
}

type recordsView struct {
	Base
	Project    store.Project
	Collection store.Collection
	Records    []views.RecordRow
	Columns    []string
	Where      string
	WhereError string
	Pager      Pager
	Form       Form
	CanWrite   bool
	CanManage  bool // ADMIN and ROOT members rename the collection and change its fields
	// CollectionIDs are the project's collections, which a reference
	// field may name, and NewField the row of a field added on the page
	// (both for the fields' panel, CanManage).
	CollectionIDs []string
	NewField      schema.Field
	Self          string // the page's own URL, to reload its table in place
	Next          string // the API's next page: after= the last id shown, or an offset past a sorted page
	Sort          string
	Desc          bool
	Heads         []sortHead
	// Fields are a typed collection's fields by name: a cell is edited
	// by its field's type.
	Fields map[string]schema.Field
	// Filter is a typed collection's filter ([field, op, value] …), and
	// FilterError what is wrong with it.
	Filter, FilterError string
}

// recordList answers GET /data/fetch.
func (h *Handlers) recordList(c *fiber.Ctx) error {
	var q recordListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	return h.records(c, q)
}

// recordPageQuery is the query of /web/data/collection, which names the
// collection id.
type recordPageQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	ID        string `query:"id" json:"id" validate:"required"`
	Where     string `query:"where" json:"where" validate:"max=10000"`
	Filter    string `query:"filter" json:"filter" validate:"max=10000"` // a typed collection's filter, as /data/fetch takes it
	Sort      string `query:"sort" json:"sort" validate:"max=200"`       // a column: _created, _updated or a key
	Desc      bool   `query:"desc" json:"desc"`
}

// recordPage renders /web/data/collection: the records of a collection,
// sorted by a column when asked.
func (h *Handlers) recordPage(c *fiber.Ctx) error {
	var q recordPageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	return h.records(c, recordListQuery{listQuery: q.listQuery, ProjectID: q.ProjectID, CollectionID: q.ID, Where: q.Where, Filter: q.Filter,
		order: store.RecordOrder{By: q.Sort, Descending: q.Desc}})
}

func (h *Handlers) records(c *fiber.Ctx, q recordListQuery) error {
	view, err := h.recordsPage(c, q)
	if err != nil {
		return err
	}
	dtos := make([]recordDTO, len(view.Records))
	for i, r := range view.Records {
		dtos[i] = newRecordDTO(r.Record)
	}
	return h.respond(c, Reply{Data: dtos, Amount: &view.Pager.Total, Capped: view.Pager.AtLeast, Next: view.Next, Last: view.Next == "",
		Page: "data/collection", View: view})
}

func (h *Handlers) recordsPage(c *fiber.Ctx, q recordListQuery) (recordsView, error) {
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return recordsView{}, err
	}
	col, err := h.store.Collection(c.UserContext(), p.ID, q.CollectionID)
	if err != nil {
		return recordsView{}, collectionMissing(err, q.CollectionID)
	}
	view := recordsView{Base: h.base(c, col.Name+" · "+p.Name), Project: p, Collection: col, Where: q.Where,
		CanWrite: canIn(c, p, store.RoleAuthor), Self: c.OriginalURL(),
		CanManage: canIn(c, p, store.RoleAdmin)}
	if view.CanManage && representationOf(c) != asJSON {
		view.NewField = schema.Field{Type: schema.Text}
		if view.CollectionIDs, err = h.store.CollectionIDs(c.UserContext(), p.ID); err != nil {
			return view, err
		}
	}
	page := q.page(defaultLimit(c, 25))
	var where json.RawMessage
	if q.Where != "" {
		if where, err = whereObject(q.Where); err != nil {
			if !errors.Is(err, errWhereShape) {
				return view, err // not clean text: 400 for every caller
			}
			if representationOf(c) == asJSON {
				return view, badRequest("where %s", err)
			}
			view.WhereError = "The filter " + err.Error() + ", such as {\"status\": \"open\"}."
			view.Pager = newPager(c, page, 0, 0)
			return view, nil
		}
	}
	ctx := c.UserContext()
	list := store.RecordList{Where: where, After: q.After, Offset: page.Offset, Limit: page.Limit + 1}
	switch q.Sort {
	case "", "_created", "-_created", "_updated", "-_updated":
		if by, desc := strings.CutPrefix(q.Sort, "-"); by != "" {
			q.order = store.RecordOrder{By: by, Descending: desc}
		}
	default:
		if list.Sort, err = col.Schema.ParseSort(q.Sort); err != nil {
			return view, fiber.NewError(fiber.StatusBadRequest, err.Error())
		}
	}
	view.Filter = q.Filter
	if list.Filters, err = col.Schema.ParseFilter(q.Filter); err != nil {
		if representationOf(c) == asJSON {
			return view, fiber.NewError(fiber.StatusBadRequest, err.Error())
		}
		view.FilterError = "This filter cannot be used: " + err.Error() + "."
		view.Pager = newPager(c, page, 0, 0)
		return view, nil
	}
	// One record more than the page: whether another page follows.
	var recs []store.Record
	if list.Sort != nil || len(list.Filters) > 0 {
		recs, err = h.store.ListRecords(ctx, p.ID, col.ID, list)
	} else {
		recs, err = h.store.Records(ctx, p.ID, col.ID, where, q.After, page.Offset, page.Limit+1, q.order)
	}
	if err != nil {
		return view, err
	}
	more := len(recs) > page.Limit
	recs = recs[:min(len(recs), page.Limit)]
	total, capped := col.Records, false
	if where != nil || len(list.Filters) > 0 {
		if total, capped, err = h.store.CountListed(ctx, p.ID, col.ID, list); err != nil {
			return view, err
		}
	}
	if capped {
		view.Pager = newCappedPager(c, page, len(recs), total, store.RecordCountCap)
	} else {
		view.Pager = newPager(c, page, len(recs), total)
	}
	switch {
	case !more:
	case q.order.By != "" || q.order.Descending || list.Sort != nil:
		view.Next = pageURL(c, map[string]string{"offset": strconv.Itoa(page.Offset + len(recs))})
	default:
		view.Next = pageURL(c, map[string]string{"after": strconv.FormatInt(recs[len(recs)-1].ID, 10), "offset": ""})
	}
	var fields []string
	for _, f := range col.Schema.Fields {
		fields = append(fields, f.Name)
	}
	view.Records, view.Columns = views.RecordRows(recs, fields...)
	view.Fields = map[string]schema.Field{}
	for _, f := range col.Schema.Fields {
		view.Fields[f.Name] = f
	}
	view.Sort, view.Desc = q.order.By, q.order.Descending
	if q.order.By != "" && q.order.By != "_created" && q.order.By != "_updated" && !slices.Contains(view.Columns, q.order.By) {
		view.Columns = append(view.Columns, q.order.By) // the sorted column stays in view
		for i := range view.Records {
			view.Records[i].Cells = append(view.Records[i].Cells, views.CellOf(view.Records[i].Data, q.order.By))
		}
	}
	view.Heads = sortHeads(c, view)
	return view, nil
}

// sortHead is a column heading of the records table: a link that sorts by
// it (ascending, then descending), and how it sorts now.
type sortHead struct {
	Label, Href string
	By          string // the sort parameter: "" for the id
	Sorted      string // ascending, descending or none, for aria-sort
}

// sortHeads are the headings of the page's columns: Id, the data's
// columns, Created and Updated, each linking to the page sorted by it.
func sortHeads(c *fiber.Ctx, v recordsView) []sortHead {
	link := func(label, by string) sortHead {
		q := url.Values{"project_id": {v.Project.ID}, "id": {v.Collection.ID}}
		if v.Where != "" {
			q.Set("where", v.Where)
		}
		h := sortHead{Label: label, By: by, Sorted: "none"}
		current := v.Sort == by
		if by != "" {
			q.Set("sort", by)
		}
		switch {
		case current && !v.Desc:
			h.Sorted = "ascending"
			q.Set("desc", "true")
		case current:
			h.Sorted = "descending"
		}
		if by == "" && current && !v.Desc {
			h.Sorted = "ascending"
			q.Set("desc", "true")
		}
		h.Href = "/web/data/collection?" + q.Encode()
		return h
	}
	heads := []sortHead{link("Id", "")}
	if v.Sort == "" && v.Desc {
		heads[0].Sorted = "descending"
	}
	for _, col := range v.Columns {
		heads = append(heads, link(col, col))
	}
	return append(heads, link("Created", "_created"), link("Updated", "_updated"))
}

// errWhereShape is a where filter that is not a JSON object.
var errWhereShape = errors.New("must be a JSON object")

// whereObject checks a where filter: a JSON object of clean text.
func whereObject(s string) (json.RawMessage, error) {
	if err := checkJSONText([]byte(s), "where"); err != nil {
		return nil, err
	}
	where, err := store.CompactObject([]byte(s))
	switch {
	case errors.Is(err, store.ErrNumberRange):
		return nil, badRequest("where %s", err)
	case err != nil:
		return nil, errWhereShape
	}
	return where, nil
}

// recordData checks the data of a record request. In a JSON body it must
// be an object (else 400, a wrongly typed parameter); typed into a form, it
// is JSON text whose faults are named beside the field (422).
func recordData(c *fiber.Ctx, in recordInput) (json.RawMessage, error) {
	form := mediaType(c) != fiber.MIMEApplicationJSON
	if form {
		// JSON typed into a form was text until now: the body's check of
		// JSON strings applies to it here.
		if err := checkJSONText(in.Data, "data"); err != nil {
			return nil, err
		}
	}
	data, err := authoring.RecordData(in.Data, form)
	if errors.Is(err, store.ErrRecordNotObject) {
		return nil, badRequest("data must be a JSON object")
	}
	return data, err
}

// recordCreate answers POST /data/create.
func (h *Handlers) recordCreate(c *fiber.Ctx) error {
	var in recordInput
	data, err := h.bindRecord(c, &in, &in)
	if err != nil {
		return h.recordFormError(c, err, in, 0)
	}
	r := store.Record{ProjectID: in.ProjectID, CollectionID: in.CollectionID, Data: data}
	if err := h.store.CreateRecord(c.UserContext(), &r); err != nil {
		return collectionMissing(err, in.CollectionID)
	}
	// The form's view is made before the flash is set: base takes a
	// waiting flash for a page, and this one is for the fragment's answer.
	view := recordsView{Base: h.base(c, ""), Project: store.Project{ID: in.ProjectID},
		Collection: store.Collection{ID: in.CollectionID}, CanWrite: true}
	h.flash(c, "success", fmt.Sprintf("Record %d created.", r.ID))
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Record created", Data: newRecordDTO(r),
		Fragment: "data/record_form", View: view,
		Event: dataChanged, Redirect: collectionURL(in.ProjectID, in.CollectionID)})
}

// bindRecord binds a record request into dst, whose record fields are in,
// and returns its data checked. Membership is checked before any form
// error is shown, so a non-member learns nothing from one.
func (h *Handlers) bindRecord(c *fiber.Ctx, dst any, in *recordInput) (json.RawMessage, error) {
	err := bind(c, dst)
	if in.ProjectID != "" {
		if _, merr := h.member(c, in.ProjectID); merr != nil {
			return nil, merr
		}
	}
	if err != nil {
		return nil, err
	}
	return recordData(c, *in)
}

// recordFormError answers a failed create or edit: the browser gets the
// form back with its error beside the data box and the text it typed.
func (h *Handlers) recordFormError(c *fiber.Ctx, err error, in recordInput, id int64) error {
	if in.ProjectID == "" || in.CollectionID == "" {
		return err
	}
	return h.formError(c, err, func() (Reply, *Form, error) {
		view := recordsView{Base: h.base(c, ""), Project: store.Project{ID: in.ProjectID}, Collection: store.Collection{ID: in.CollectionID}, CanWrite: true,
			Self: collectionURL(in.ProjectID, in.CollectionID)}
		fragment := "data/record_form"
		if id != 0 {
			view.Records = []views.RecordRow{{Record: store.Record{ID: id}}}
			fragment = "data/record_edit"
		}
		return Reply{Page: "data/collection", Fragment: fragment, View: &view}, &view.Form, nil
	})
}

// recordShow answers GET /data/fetch/one.
func (h *Handlers) recordShow(c *fiber.Ctx) error {
	var q recordQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	r, err := h.store.Record(c.UserContext(), q.ProjectID, q.CollectionID, q.ID)
	if err != nil {
		return recordMissing(err, q.ID)
	}
	// In the records table, Edit swaps the row for this form.
	rows, _ := views.RecordRows([]store.Record{r})
	view := recordsView{Base: h.base(c, ""), Project: store.Project{ID: r.ProjectID}, Collection: store.Collection{ID: r.CollectionID},
		Records: rows, CanWrite: true, Self: collectionURL(r.ProjectID, r.CollectionID)}
	return h.respond(c, Reply{Data: newRecordDTO(r), Fragment: "data/record_edit", View: view, Redirect: view.Self})
}

func recordMissing(err error, id int64) error {
	return notFound(err, fmt.Sprintf("record %d not found", id))
}

// recordUpdate answers PATCH /data/update: data replaces the record's.
func (h *Handlers) recordUpdate(c *fiber.Ctx) error {
	var in recordUpdateInput
	data, err := h.bindRecord(c, &in, &in.recordInput)
	if err != nil {
		return h.recordFormError(c, err, in.recordInput, in.ID)
	}
	r := store.Record{ProjectID: in.ProjectID, CollectionID: in.CollectionID, ID: in.ID, Data: data}
	if err := h.store.UpdateRecord(c.UserContext(), &r); err != nil {
		return recordMissing(err, in.ID)
	}
	h.flash(c, "success", fmt.Sprintf("Record %d updated.", r.ID))
	// In the table the edit row goes; the table reloads itself with the row.
	return h.respond(c, Reply{Message: "Record updated", Data: newRecordDTO(r), Fragment: "partials/gone", Event: dataChanged,
		Redirect: collectionURL(in.ProjectID, in.CollectionID)})
}

// cellInput is one cell of the records grid: a record's top-level field
// and its new value, JSON text.
type cellInput struct {
	ProjectID    string `json:"project_id" validate:"required"`
	CollectionID string `json:"collection_id" validate:"required"`
	ID           int64  `json:"id" validate:"required,min=1"`
	Field        string `json:"field" validate:"required,max=200"`
	Value        string `json:"value" validate:"required,max=65536"`
}

// recordCell answers PATCH /web/data/cell, the records grid's edit of one
// cell: the field is set and the record's other fields stay as they are
// (store.SetRecordField). It answers the record and the cell's text.
func (h *Handlers) recordCell(c *fiber.Ctx) error {
	var in cellInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	if err := checkJSONText([]byte(in.Value), "value"); err != nil {
		return err
	}
	r := store.Record{ProjectID: in.ProjectID, CollectionID: in.CollectionID, ID: in.ID}
	err := h.store.SetRecordField(c.UserContext(), &r, in.Field, []byte(in.Value))
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return &ValidationError{Fields: map[string]string{"value": "is not valid JSON"}}
	case errors.Is(err, store.ErrRecordTooLarge):
		return &ValidationError{Fields: map[string]string{"value": "would make the record larger than 64 KiB (65,536 bytes) of JSON"}}
	case errors.Is(err, store.ErrNumberRange):
		return &ValidationError{Fields: map[string]string{"value": store.ErrNumberRange.Error()}}
	case err != nil:
		return recordMissing(err, in.ID)
	}
	return h.respond(c, Reply{Message: fmt.Sprintf("Record %d: %s set", r.ID, in.Field), Data: cellDTO{Record: newRecordDTO(r), Text: views.CellOf(r.Data, in.Field)}})
}

// cellDTO is the answer to a cell's edit: the record, and the cell as the
// table shows it.
type cellDTO struct {
	Record recordDTO `json:"record"`
	Text   string    `json:"text"`
}

// recordDelete answers DELETE /data/delete.
func (h *Handlers) recordDelete(c *fiber.Ctx) error {
	var q recordQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.DeleteRecord(c.UserContext(), q.ProjectID, q.CollectionID, q.ID); err != nil {
		return recordMissing(err, q.ID)
	}
	h.flash(c, "success", fmt.Sprintf("Record %d deleted.", q.ID))
	return h.respond(c, Reply{Message: "Record deleted", Fragment: "partials/gone", Event: dataChanged, Redirect: collectionURL(q.ProjectID, q.CollectionID)})
}
