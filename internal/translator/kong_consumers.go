package translator

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/konductor/konductor/internal/kongstate"
)

// CredentialLabel names a Secret's credential type (translation-rules.md §9.2).
const CredentialLabel = "konghq.com/credential"

// credentialType is one of the seven credential types: the fields a Secret may give, which of
// them are required, and how the credential joins its consumer.
type credentialType struct {
	fields   []string
	required []string
	// unique is the field whose value must be unique across all consumers, and the name of
	// the index KIC reports a conflict in; "" when the type has none.
	unique, index string
	add           func(c *file.FConsumer, raw []byte) error
}

func decodeInto[T any](list *[]*T) func(*file.FConsumer, []byte) error {
	return func(_ *file.FConsumer, raw []byte) error {
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			return err
		}
		*list = append(*list, v)
		return nil
	}
}

// credentialTypes by label value. KIC's legacy aliases (keyauth_credential, ...) are not
// accepted as label values.
func credentialTypes(c *file.FConsumer) map[string]credentialType {
	return map[string]credentialType{
		"key-auth":   {fields: []string{"key", "ttl"}, required: []string{"key"}, unique: "key", index: "key-auth on 'key'", add: decodeInto(&c.KeyAuths)},
		"basic-auth": {fields: []string{"username", "password"}, required: []string{"username"}, unique: "username", index: "basic-auth on 'username'", add: decodeInto(&c.BasicAuths)},
		"hmac-auth":  {fields: []string{"username", "secret"}, required: []string{"username"}, unique: "username", index: "hmac-auth on 'username'", add: decodeInto(&c.HMACAuths)},
		"jwt":        {fields: []string{"key", "algorithm", "rsa_public_key", "secret"}, required: []string{"key"}, unique: "key", index: "jwt-auth on 'key'", add: decodeInto(&c.JWTAuths)},
		"acl":        {fields: []string{"group"}, required: []string{"group"}, add: decodeInto(&c.ACLGroups)},
		"oauth2": {fields: []string{"name", "client_id", "client_secret", "redirect_uris", "hash_secret", "client_type"}, required: []string{"client_id", "name"},
			unique: "client_id", index: "oauth2-credentials on 'client_id'", add: decodeInto(&c.Oauth2Creds)},
		"mtls-auth": {fields: []string{"subject_name"}, required: []string{"subject_name"}, add: decodeInto(&c.MTLSAuths)},
	}
}

// consumerEntry is a consumer being built, with its object and credential Secrets.
type consumerEntry struct {
	obj     *kongv1.KongConsumer
	fc      *file.FConsumer
	secrets []credentialUse
}

type credentialUse struct {
	secret *corev1.Secret
	index  string // conflict index, "" when the type has none
	value  string // the value that must be unique
}

// consumers translates KongConsumers and their credential Secrets (translation-rules.md §9.1-9.2).
// A consumer whose credential conflicts with another's (the same key-auth key, ...) is left
// out together with every other consumer involved, as KIC does: Kong would refuse them all.
func (b *builder) consumers() {
	consumers := append([]*kongv1.KongConsumer(nil), b.snap.KongConsumers...)
	sortByAge(consumers)
	var entries []*consumerEntry
	// Usernames and custom_ids are global in Kong but come from namespaced objects: the
	// oldest KongConsumer (then by namespace and name, sortByAge) keeps one, the others are
	// left out, never merged into it (docs/security.md, item 1).
	names := map[string]*kongv1.KongConsumer{} // username or custom_id -> holder
	b.shareConsumerNames(consumers)
	for _, kc := range consumers {
		if kc == nil {
			continue
		}
		if b.consumerNameTaken(kc, names) {
			continue
		}
		if e := b.consumer(kc); e != nil {
			entries = append(entries, e)
		}
	}

	// Conflicts: every consumer holding a duplicated value goes.
	holders := map[string][]*consumerEntry{} // index + value -> consumers
	var keys []string
	for _, e := range entries {
		for _, u := range e.secrets {
			if u.index == "" {
				continue
			}
			k := u.index + "\x00" + u.value
			if _, ok := holders[k]; !ok {
				keys = append(keys, k)
			}
			holders[k] = append(holders[k], e)
		}
	}
	dropped := map[*consumerEntry]bool{}
	for _, k := range keys {
		if len(holders[k]) < 2 {
			continue
		}
		index, value, _ := strings.Cut(k, "\x00")
		b.parts.consumers.conflict = true
		for _, e := range holders[k] {
			b.share(index+" "+hashed(value), e.obj, gvkKongConsumer)
			dropped[e] = true
			for _, u := range e.secrets {
				if u.index == index && u.value == value {
					b.problem(u.secret, gvkSecret, "", "Secret has conflicting credential: conflict detected in %q index", index)
				}
			}
			b.problem(e.obj, gvkKongConsumer, "credentials", "Consumer has conflicting credentials: conflict detected in %q index", index)
		}
	}
	b.consumerIdents = map[string]string{}
	b.consumerRefs = map[string]*kong.Consumer{}
	for _, e := range entries {
		if dropped[e] {
			continue
		}
		b.state.Consumers = append(b.state.Consumers, e.fc)
		b.consumerIdents[e.obj.Namespace+"/"+e.obj.Name] = consumerIdent(e.fc)
		b.consumerRefs[consumerIdent(e.fc)] = consumerRef(e.fc)
		b.consumerObjs = append(b.consumerObjs, e.obj)
	}
	b.parts.consumers.objs = b.consumerObjs
}

// shareConsumerNames records, for each value that several KongConsumers ask for as their
// username or custom_id, that they share it: which of them has it depends on all of them, even
// on one left out for another of its names (it then asks for none, and a younger one gets it).
func (b *builder) shareConsumerNames(consumers []*kongv1.KongConsumer) {
	askers := map[string][]*kongv1.KongConsumer{}
	var order []string
	for _, kc := range consumers {
		if kc == nil {
			continue
		}
		for _, v := range consumerNames(kc) {
			if _, seen := askers[v]; !seen {
				order = append(order, v)
			}
			askers[v] = append(askers[v], kc)
		}
	}
	for _, v := range order {
		if same := askers[v]; len(same) > 1 {
			for _, kc := range same {
				b.share("consumer name "+v, kc, gvkKongConsumer)
			}
		}
	}
}

// consumerNames are the values kc asks for as its username and custom_id, each once. Kong
// keeps each unique in its own column, but they are one identity space here: Kong resolves a
// consumer named in a plugin or an Admin API path by username, and upstream services read
// X-Consumer-Username and X-Consumer-Custom-ID alike, so a tenant's custom_id "alice" must not
// stand beside another namespace's username "alice" (docs/security.md).
func consumerNames(kc *kongv1.KongConsumer) []string {
	switch {
	case kc.Username == "" && kc.CustomID == "":
		return nil
	case kc.Username == "":
		return []string{kc.CustomID}
	case kc.CustomID == "" || kc.CustomID == kc.Username:
		return []string{kc.Username}
	}
	return []string{kc.Username, kc.CustomID}
}

// consumerNameTaken reports, with a problem on kc, whether an older KongConsumer holds kc's
// username or custom_id, as either of its own (names: value -> holder); else it records kc as
// the holder of both.
func (b *builder) consumerNameTaken(kc *kongv1.KongConsumer, names map[string]*kongv1.KongConsumer) bool {
	taken := false
	for _, n := range []struct{ field, value string }{{"username", kc.Username}, {"custom_id", kc.CustomID}} {
		if n.value == "" {
			continue
		}
		if holder := names[n.value]; holder != nil {
			if b.parts.consumers.contested == nil {
				b.parts.consumers.contested = map[string]struct{}{}
			}
			b.parts.consumers.contested[n.value] = struct{}{}
			b.problem(kc, gvkKongConsumer, n.field, "%s %q is already KongConsumer %s/%s's %s (older); usernames and custom_ids are unique across consumers, this consumer is left out",
				n.field, n.value, holder.Namespace, holder.Name, heldAs(holder, n.value))
			taken = true
		}
	}
	if !taken {
		for _, v := range consumerNames(kc) {
			names[v] = kc
		}
	}
	return taken
}

// heldAs is the field of holder that holds value: "username" or "custom_id".
func heldAs(holder *kongv1.KongConsumer, value string) string {
	if holder.Username == value {
		return "username"
	}
	return "custom_id"
}

// consumerIdent is the name a consumer's plugins are keyed by (their KIC IDs, one plugin of a
// name per consumer): its username, else its custom_id (translation-rules.md §8.1). Plugins
// point at the consumer by its ID (consumerRef).
func consumerIdent(c *file.FConsumer) string { return refIdent(&c.Consumer) }

// refIdent is consumerIdent of a consumer or of a plugin's reference to one (consumerRef).
func refIdent(c *kong.Consumer) string {
	if c.Username != nil {
		return *c.Username
	}
	return str(c.CustomID)
}

// consumerRef is how a plugin entity points at c: by c's ID, which Kong's declarative loader
// and database take, with the ident beside it (not rendered: go-database-reconciler writes a
// plugin's consumer as its ID alone) so that the relation can be read back (relationOf). KIC
// writes the username or custom_id; Kong resolves that as a username, so a consumer with only
// a custom_id would be another's (docs/security.md) or, with no such username, refused.
func consumerRef(c *file.FConsumer) *kong.Consumer {
	return &kong.Consumer{ID: c.ID, Username: c.Username, CustomID: c.CustomID}
}

func (b *builder) consumer(kc *kongv1.KongConsumer) *consumerEntry {
	if kc.Username == "" && kc.CustomID == "" {
		b.problem(kc, gvkKongConsumer, "username", "no username or custom_id specified")
		return nil
	}
	fc := &file.FConsumer{Consumer: kong.Consumer{Tags: b.entityTags(kc, gvkKongConsumer)}}
	if kc.Username != "" {
		fc.Username = kong.String(kc.Username)
		fc.ID = kong.String(kongstate.ConsumerID(b.opts.Workspace, kc.Username))
	}
	if kc.CustomID != "" {
		fc.CustomID = kong.String(kc.CustomID)
		if kc.Username == "" {
			fc.ID = kong.String(kongstate.ConsumerIDByCustomID(b.opts.Workspace, kc.CustomID))
		}
	}
	for i, name := range kc.ConsumerGroups {
		b.refer(kc, gvkKongConsumer, ref(gvkKongConsumerGroup, kc.Namespace, name))
		if kc.Username == "" {
			// Kong's membership names the consumer by username or ID, and a consumer with
			// only a custom_id has no stable ID (KIC gives it none): KIC would send an
			// empty name and have the whole configuration refused.
			b.problem(kc, gvkKongConsumer, fmt.Sprintf("consumerGroups[%d]", i), "a consumer without username cannot join consumer group %q; set username", name)
			continue
		}
		kept := b.keptConsumerGroups()[name]
		switch {
		case kept == nil:
			b.problem(kc, gvkKongConsumer, fmt.Sprintf("consumerGroups[%d]", i), "nonexistent consumer group: %q", kc.Namespace+"/"+name)
			continue
		case kept.Namespace != kc.Namespace:
			// Another namespace holds the group's name in Kong (its KongConsumerGroup is
			// older): joining it would give this consumer that namespace's plugins.
			b.contend("consumer_group "+name, kc, gvkKongConsumer, kept, gvkKongConsumerGroup)
			if !b.hasConsumerGroup(kc.Namespace, name) {
				b.problem(kc, gvkKongConsumer, fmt.Sprintf("consumerGroups[%d]", i), "nonexistent consumer group: %q", kc.Namespace+"/"+name)
			} else {
				b.problem(kc, gvkKongConsumer, fmt.Sprintf("consumerGroups[%d]", i),
					"consumer group %q is KongConsumerGroup %s/%s's in Kong (older); a consumer joins only a group of its own namespace", name, kept.Namespace, kept.Name)
			}
			continue
		}
		fc.Groups = append(fc.Groups, &kong.ConsumerGroup{Name: kong.String(name)})
	}
	e := &consumerEntry{obj: kc, fc: fc}
	types := credentialTypes(fc)
	for i, name := range kc.Credentials {
		field := fmt.Sprintf("credentials[%d]", i)
		fail := func(format string, args ...any) {
			b.problem(kc, gvkKongConsumer, field, "credential %q failure: %s", name, fmt.Sprintf(format, args...))
		}
		b.refer(kc, gvkKongConsumer, ref(gvkSecret, kc.Namespace, name))
		secret := b.secrets[kc.Namespace+"/"+name]
		if secret == nil {
			fail("Failed to fetch secret: secret %s/%s not found", kc.Namespace, name)
			continue
		}
		typ, labelled := secret.Labels[CredentialLabel]
		if !labelled {
			fail("could not load credential from Secret: Secret has no %s label", CredentialLabel)
			continue
		}
		ct, ok := types[typ]
		if !ok {
			fail("failed to provision credential: unsupported credential type: %q", typ)
			continue
		}
		values, errs := credentialValues(secret, ct)
		for _, err := range errs {
			fail("%s", err)
		}
		var missing []string
		for _, r := range ct.required {
			if s, _ := values[r].(string); s == "" {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			fail("failed to provision credential: %s credential is missing required field(s) %s", typ, strings.Join(missing, ", "))
			continue
		}
		if typ == "jwt" && values["algorithm"] == nil {
			values["algorithm"] = "HS256"
		}
		if msg := credentialKongRefuses(typ, values); msg != "" {
			fail("%s; the credential is left out", msg)
			continue
		}
		values["tags"] = b.tags(secret, gvkSecret)
		raw, _ := json.Marshal(values)
		if err := ct.add(fc, raw); err != nil {
			fail("failed to provision credential: %v", err)
			continue
		}
		use := credentialUse{secret: secret}
		if ct.unique != "" {
			// As Kong will hold it: the rendering repairs invalid UTF-8 (each bad byte
			// becomes U+FFFD, as encoding/json does), so two values that differ only in
			// bad bytes are one key in Kong, which refuses the second.
			use.index, use.value = ct.index, kongstate.RepairUTF8(values[ct.unique].(string))
		}
		e.secrets = append(e.secrets, use)
	}
	return e
}

// credentialValues reads a credential Secret's data (translation-rules.md §9.2): every key the type
// knows as a string, except redirect_uris (a comma-separated list), hash_secret (a bool;
// invalid reads as false) and ttl (an int; invalid is left out). Secret values never appear in
// the errors.
func credentialValues(secret *corev1.Secret, ct credentialType) (map[string]any, []string) {
	data := map[string]string{}
	for k, v := range secret.StringData {
		data[k] = v
	}
	for k, v := range secret.Data {
		data[k] = string(v)
	}
	out := map[string]any{}
	var errs []string
	for _, f := range ct.fields {
		v, ok := data[f]
		if !ok {
			continue
		}
		switch f {
		case "redirect_uris":
			out[f] = strings.Split(v, ",")
		case "hash_secret":
			bv, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, "Failed to parse hash_secret to bool: invalid syntax. defaulting to false")
			}
			out[f] = bv
		case "ttl":
			iv, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, "Failed to parse ttl to int: invalid syntax, skipfilling the field")
				continue
			}
			out[f] = iv
		default:
			out[f] = v
		}
	}
	return out, errs
}

// consumerGroups translates KongConsumerGroups (translation-rules.md §9.3): {name, id, tags}, the
// name being the object's name.
func (b *builder) consumerGroups() {
	kept := b.keptConsumerGroups()
	b.consumerGroupObjs = map[string]*kongv1beta1.KongConsumerGroup{}
	for _, g := range b.sortedConsumerGroups() {
		if first := kept[g.Name]; first != g {
			b.contend("consumer_group "+g.Name, g, gvkKongConsumerGroup, first, gvkKongConsumerGroup)
			b.problem(g, gvkKongConsumerGroup, "metadata.name", "consumer group %q is already defined by KongConsumerGroup %s/%s (older); Kong group names are unique, this one is left out",
				g.Name, first.Namespace, first.Name)
			continue
		}
		b.consumerGroupObjs[g.Name] = g
		b.state.ConsumerGroups = append(b.state.ConsumerGroups, &file.FConsumerGroupObject{ConsumerGroup: kong.ConsumerGroup{
			ID:   kong.String(kongstate.ConsumerGroupID(b.opts.Workspace, g.Name)),
			Name: kong.String(g.Name),
			Tags: b.entityTags(g, gvkKongConsumerGroup),
		}})
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// sortedConsumerGroups are the snapshot's KongConsumerGroups, oldest first (sortByAge).
func (b *builder) sortedConsumerGroups() []*kongv1beta1.KongConsumerGroup {
	groups := make([]*kongv1beta1.KongConsumerGroup, 0, len(b.snap.KongConsumerGroups))
	for _, g := range b.snap.KongConsumerGroups {
		if g != nil {
			groups = append(groups, g)
		}
	}
	sortByAge(groups)
	return groups
}

// keptConsumerGroups is, by name, the KongConsumerGroup that holds the name in Kong: the
// oldest of that name (then by namespace and name), which a tenant cannot take by choosing a
// namespace that sorts first (docs/security.md, item 1).
func (b *builder) keptConsumerGroups() map[string]*kongv1beta1.KongConsumerGroup {
	if b.groupHolders == nil {
		b.groupHolders = map[string]*kongv1beta1.KongConsumerGroup{}
		for _, g := range b.sortedConsumerGroups() {
			if _, taken := b.groupHolders[g.Name]; !taken {
				b.groupHolders[g.Name] = g
			}
		}
	}
	return b.groupHolders
}

// hasConsumerGroup reports whether namespace ns has a KongConsumerGroup name.
func (b *builder) hasConsumerGroup(ns, name string) bool {
	for _, g := range b.snap.KongConsumerGroups {
		if g != nil && g.Namespace == ns && g.Name == name {
			return true
		}
	}
	return false
}

// credentialKongRefuses is what Kong's schema says of a credential konductor would send
// ("" when it takes it), checked here so that one credential does not make a DB-less gateway
// refuse the whole configuration. Values come from a Secret: the message names the field,
// never the value (docs/security.md, item 3).
func credentialKongRefuses(typ string, values map[string]any) string {
	switch typ {
	case "jwt":
		// Kong's jwt daos: an algorithm other than HS* needs rsa_public_key, a key that
		// loads.
		alg, _ := values["algorithm"].(string)
		if strings.HasPrefix(alg, "HS") {
			return ""
		}
		key, _ := values["rsa_public_key"].(string)
		if key == "" {
			return fmt.Sprintf("failed to provision credential: jwt algorithm %s needs rsa_public_key", alg)
		}
		if !publicKeyPEM(key) {
			return "failed to provision credential: rsa_public_key is not a PEM public key (Kong: invalid key)"
		}
	case "oauth2":
		// Kong's oauth2 daos (validate_uri): an absolute URL with a host, no fragment.
		uris, _ := values["redirect_uris"].([]string)
		for i, u := range uris {
			p, err := url.Parse(strings.TrimSpace(u))
			if err != nil || p.Scheme == "" || p.Host == "" {
				return fmt.Sprintf("failed to provision credential: redirect_uris[%d] is not an absolute URL with a host", i)
			}
			if p.Fragment != "" || strings.Contains(u, "#") {
				return fmt.Sprintf("failed to provision credential: redirect_uris[%d] has a fragment, which Kong does not allow", i)
			}
		}
	}
	return ""
}

// publicKeyPEM reports whether s holds a PEM public key (PKIX, or PKCS#1 RSA), as OpenSSL
// loads for Kong.
func publicKeyPEM(s string) bool {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return false
	}
	switch block.Type {
	case "PUBLIC KEY":
		_, err := x509.ParsePKIXPublicKey(block.Bytes)
		return err == nil
	case "RSA PUBLIC KEY":
		_, err := x509.ParsePKCS1PublicKey(block.Bytes)
		return err == nil
	}
	return false
}
