package kongemu

import (
	"fmt"
	"net/http"

	"github.com/google/uuid"
)

// Kong Gateway Enterprise's consumer group endpoints beyond plain CRUD: GET of a group
// answers the group with its consumers, and memberships (consumer_group_consumers, no
// collection of their own) live under /consumer_groups/{group}/consumers.

// isConsumerGroupSpecial reports whether a request is for one of those endpoints.
func (e *Emulator) isConsumerGroupSpecial(r *http.Request, segs []string) bool {
	if segs[0] != "consumer_groups" || !e.prof.enterprise || len(segs) < 2 {
		return false
	}
	if len(segs) == 2 {
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	}
	return segs[2] == "consumers" && len(segs) <= 4
}

// consumerGroupSpecial serves those endpoints. Caller holds mu.
func (e *Emulator) consumerGroupSpecial(w http.ResponseWriter, r *http.Request, segs []string, body map[string]any) {
	cgs := schemas["consumer_groups"]
	if aerr := checkKey(cgs, segs[1]); aerr != nil {
		writeErr(w, aerr)
		return
	}
	group := e.db.lookup(cgs, segs[1])
	if group == nil {
		writeErr(w, errNotFound)
		return
	}
	gid := group["id"].(string)
	if len(segs) == 2 {
		out := map[string]any{"consumer_group": e.db.render(cgs, group), "plugins": []any{}}
		if r.URL.Query().Get("list_consumers") != "false" {
			out["consumers"] = e.groupConsumers(gid)
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && e.dbless() {
		writeErr(w, errBody(http.StatusMethodNotAllowed, 12, "operation unsupported",
			fmt.Sprintf("cannot %s 'consumer_group_consumers' entities when not using a database", verb(r.Method)), nil))
		return
	}
	switch {
	case len(segs) == 3 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		if e.prof.atLeast(3, 5) {
			writeJSON(w, http.StatusOK, map[string]any{"data": e.groupConsumers(gid), "next": nil})
		} else {
			writeJSON(w, http.StatusOK, map[string]any{"consumer_group": e.db.render(cgs, group), "consumers": e.groupConsumers(gid)})
		}
	case len(segs) == 3 && r.Method == http.MethodPost:
		e.addGroupConsumers(w, r, group, body)
	case len(segs) == 3 && r.Method == http.MethodDelete:
		for _, id := range append([]string(nil), e.db.referencing("consumer_group_consumers", "consumer_group", gid).list()...) {
			e.db.del("consumer_group_consumers", id)
		}
		w.WriteHeader(http.StatusNoContent)
	case len(segs) == 4 && (r.Method == http.MethodGet || r.Method == http.MethodDelete):
		consumer := e.db.lookup(schemas["consumers"], segs[3])
		var mid string
		if consumer != nil {
			mid = membershipID(gid, consumer["id"].(string))
		}
		if r.Method == http.MethodDelete {
			if mid != "" && e.db.get("consumer_group_consumers", mid) != nil {
				e.db.del("consumer_group_consumers", mid)
				e.record(r.Method, r.URL.Path, "consumer_group_consumers", mid, "", nil)
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if mid == "" || e.db.get("consumer_group_consumers", mid) == nil {
			writeErr(w, errNotFound)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"consumer_group": e.db.render(cgs, group),
			"consumers": []any{e.db.render(schemas["consumers"], consumer)}})
	default:
		writeErr(w, methodNotAllowed)
	}
}

// membershipID is the emulator's id of a (group, consumer) membership.
func membershipID(groupID, consumerID string) string {
	return uuid.NewSHA1(dblessNamespace, []byte("consumer_group_consumers:"+groupID+":"+consumerID)).String()
}

// groupConsumers renders the consumers of a group, by consumer id.
func (e *Emulator) groupConsumers(groupID string) []any {
	out := []any{}
	var ids []string
	for _, mid := range e.db.referencing("consumer_group_consumers", "consumer_group", groupID).list() {
		ids = append(ids, refID(e.db.get("consumer_group_consumers", mid)["consumer"]))
	}
	for _, id := range sortedKeys(setOf(ids)) {
		if c := e.db.get("consumers", id); c != nil {
			out = append(out, e.db.render(schemas["consumers"], c))
		}
	}
	return out
}

func setOf(l []string) map[string]bool {
	m := make(map[string]bool, len(l))
	for _, s := range l {
		m[s] = true
	}
	return m
}

// addGroupConsumers serves POST /consumer_groups/{group}/consumers {"consumer": x | [x...]},
// x a consumer's id or username.
func (e *Emulator) addGroupConsumers(w http.ResponseWriter, r *http.Request, group, body map[string]any) {
	var keys []string
	switch c := body["consumer"].(type) {
	case string:
		keys = []string{c}
	case []any:
		for _, x := range c {
			if s, ok := x.(string); ok {
				keys = append(keys, s)
			}
		}
	}
	if len(keys) == 0 {
		writeErr(w, msgErr(http.StatusBadRequest, "must provide consumer"))
		return
	}
	gid := group["id"].(string)
	var added []any
	var consumers []map[string]any
	for _, k := range keys {
		c := e.db.lookup(schemas["consumers"], k)
		if c == nil {
			writeErr(w, msgErr(http.StatusNotFound, "Consumer '"+k+"' not found"))
			return
		}
		if e.db.get("consumer_group_consumers", membershipID(gid, c["id"].(string))) != nil {
			writeErr(w, msgErr(http.StatusConflict, fmt.Sprintf("Consumer '%s' already in group '%s'", k, gid)))
			return
		}
		consumers = append(consumers, c)
	}
	now := e.opts.Now().Unix()
	for _, c := range consumers {
		cid := c["id"].(string)
		m := map[string]any{"id": membershipID(gid, cid), "consumer_group": map[string]any{"id": gid},
			"consumer": map[string]any{"id": cid}}
		fillAuto(schemas["consumer_group_consumers"], m, now, nil)
		e.db.put("consumer_group_consumers", m)
		e.record(r.Method, r.URL.Path, "consumer_group_consumers", m["id"].(string), entityName(schemas["consumers"], c), nil)
		added = append(added, e.db.render(schemas["consumers"], c))
	}
	writeJSON(w, http.StatusCreated, map[string]any{"consumer_group": e.db.render(schemas["consumer_groups"], group),
		"consumers": added})
}
