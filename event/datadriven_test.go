package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the actual output")

// seqIDs is a deterministic IDs source: sequential ids (reg_1, reg_2...) so
// scripts can name them, and seeded Crockford codes.
type seqIDs struct {
	n   map[string]int
	rng *rand.Rand
}

func newSeqIDs(seed uint64) *seqIDs {
	return &seqIDs{n: map[string]int{}, rng: rand.New(rand.NewPCG(seed, seed))}
}

func (s *seqIDs) New(prefix string) string {
	s.n[prefix]++
	return prefix + strconv.Itoa(s.n[prefix])
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

func (s *seqIDs) Code(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = crockford[s.rng.IntN(len(crockford))]
	}
	return string(b)
}

// commandTypes names every command for scripts and fuzzing: the registry.
func commandTypes() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, k := range commandKinds {
		out[k.name] = k.typ
	}
	return out
}

// decodeCommand builds a command from a script line's tail: Go-field
// assignments (ID=reg_1) for json:"-" fields, then an optional JSON body
// decoded strictly as the HTTP binder would.
func decodeCommand(typ reflect.Type, args string) (Command, error) {
	v := reflect.New(typ)
	body := ""
	if i := strings.IndexAny(args, "{["); i >= 0 {
		args, body = args[:i], args[i:]
	}
	if body != "" {
		if body[0] == '[' {
			// An array body (PUT bundle items) goes to Items.
			body = `{"items":` + body + `}`
			var tmp struct {
				Items []BundleItem `json:"items"`
			}
			if err := json.Unmarshal([]byte(body), &tmp); err != nil {
				return nil, err
			}
			v.Elem().FieldByName("Items").Set(reflect.ValueOf(tmp.Items))
		} else {
			d := json.NewDecoder(strings.NewReader(body))
			d.DisallowUnknownFields()
			if err := d.Decode(v.Interface()); err != nil {
				return nil, err
			}
		}
	}
	for _, kv := range strings.Fields(args) {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("bad argument %q", kv)
		}
		f := v.Elem().FieldByName(k)
		if !f.IsValid() {
			return nil, fmt.Errorf("no field %s", k)
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(val)
		case reflect.Int, reflect.Int64:
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return nil, err
			}
			f.SetInt(n)
		case reflect.Bool:
			f.SetBool(val == "true")
		case reflect.Slice:
			// A batch of joins' clients: Clients=c1,c2 (waitingroom.go).
			if f.Type() == reflect.TypeFor[[]string]() {
				f.Set(reflect.ValueOf(strings.Split(val, ",")))
				continue
			}
			// A device's doors: Doors=event,session:ses_1 (door.go).
			if f.Type() != reflect.TypeFor[[]DoorRef]() {
				return nil, fmt.Errorf("cannot set %s", k)
			}
			var doors []DoorRef
			for _, d := range strings.Split(val, ",") {
				typ, id, _ := strings.Cut(d, ":")
				doors = append(doors, DoorRef{SubjectType: typ, SubjectID: id})
			}
			f.Set(reflect.ValueOf(doors))
		case reflect.Struct:
			t, err := time.Parse(time.RFC3339, val)
			if err != nil {
				return nil, err
			}
			f.Set(reflect.ValueOf(t))
		default:
			return nil, fmt.Errorf("cannot set %s", k)
		}
	}
	return v.Elem().Interface().(Command), nil
}

// scriptRunner runs one testdata script against one machine.
type scriptRunner struct {
	t    *testing.T
	m    *Machine
	now  time.Time
	cmds map[string]reflect.Type
	log  [][]byte // every change, encoded, for the replay check
	// feed prints each change's feed entries ("feed on"), with the seq
	// State.FeedSeq gives them.
	feed bool
}

func newScriptRunner(t *testing.T) *scriptRunner {
	r := &scriptRunner{t: t, cmds: commandTypes(), now: time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)}
	r.reset()
	return r
}

func testConfig() Config {
	return Config{BaseURL: "http://t", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour}
}

// step decides c at now and applies its changes, as the actor does.
func step(m *Machine, now time.Time, c Command) (any, error) {
	res, chs, err := m.Decide(now, c)
	for _, ch := range chs {
		m.Apply(ch)
	}
	return res, err
}

// mustStep is step for a command that must succeed.
func mustStep(t *testing.T, m *Machine, now time.Time, c Command) any {
	t.Helper()
	res, err := step(m, now, c)
	require.NoError(t, err)
	return res
}

func (r *scriptRunner) reset() {
	r.m = NewMachine("evt_1", testConfig(), newSeqIDs(1))
	r.log = nil
}

func (r *scriptRunner) run(line string) string {
	verb, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch verb {
	case "reset":
		r.reset()
		return "ok"
	case "at":
		t, err := time.Parse(time.RFC3339, rest)
		require.NoError(r.t, err)
		r.now = t
		return "ok"
	case "tick":
		d, err := time.ParseDuration(rest)
		require.NoError(r.t, err)
		r.now = r.now.Add(d)
		return "now " + r.now.Format(time.RFC3339)
	case "deadline":
		d, ok := r.m.NextDeadline()
		if !ok {
			return "none"
		}
		return d.UTC().Format(time.RFC3339)
	case "replay":
		return r.replayCheck()
	case "feed":
		r.feed = rest == "on"
		return "ok"
	case "limits":
		// limits <open orders per client> <open sessions per client>
		_, err := fmt.Sscan(rest, &r.m.cfg.OpenOrdersPerClient, &r.m.cfg.OpenSessionsPerClient)
		require.NoError(r.t, err)
		return "ok"
	}
	name, args, _ := strings.Cut(strings.TrimSpace(line), " ")
	typ, ok := r.cmds[name]
	if !ok {
		r.t.Fatalf("unknown command %q", name)
	}
	if name == "Expire" {
		args = "Now=" + r.now.Format(time.RFC3339)
	}
	cmd, err := decodeCommand(typ, args)
	if err != nil {
		return "decode error: " + err.Error()
	}
	return r.exec(cmd)
}

func (r *scriptRunner) exec(cmd Command) string {
	var out strings.Builder
	before, err := MarshalState(r.m.State())
	require.NoError(r.t, err)
	res, changes, err := r.m.Decide(r.now, cmd)
	after, err2 := MarshalState(r.m.State())
	require.NoError(r.t, err2)
	require.Equal(r.t, string(before), string(after), "Decide mutated the state")
	if err != nil {
		var e *Error
		require.True(r.t, errors.As(err, &e), "non-business error %v", err)
		require.Empty(r.t, changes)
		fmt.Fprintf(&out, "error %s: %s", codeName(e.Code), e.Message)
		for _, d := range e.Details {
			fmt.Fprintf(&out, " [%s: %s]", d.Field, d.Reason)
		}
		return out.String()
	}
	k := commandKindOf(cmd)
	require.NotNil(r.t, k, "unregistered command %T", cmd)
	scriptRan[k.name] = true
	if k.mode == opRead {
		require.Empty(r.t, changes, "read %s changed the event", k.name)
	}
	if res != nil || k.result.Kind() != reflect.Interface {
		require.Equal(r.t, k.result, reflect.TypeOf(res), "result of %s", k.name)
	}
	rb, err := json.Marshal(res)
	require.NoError(r.t, err)
	fmt.Fprintf(&out, "result %s", rb)
	for _, ch := range changes {
		b, err := MarshalChange(ch)
		require.NoError(r.t, err)
		back, err := UnmarshalChange(b)
		require.NoError(r.t, err)
		require.Equal(r.t, ch, back, "change round trip")
		r.log = append(r.log, b)
		r.m.Apply(back)
		js, err := json.Marshal(ch)
		require.NoError(r.t, err)
		fmt.Fprintf(&out, "\nchange %s %s", ch.ChangeKind(), js)
		for _, e := range AppendEffects(nil, ch) {
			fmt.Fprintf(&out, "\neffect %s", e)
		}
		if r.feed {
			fes := AppendFeed(nil, ch)
			first := r.m.FeedSeq() - uint64(len(fes)) + 1
			for i, e := range fes {
				obj, ok := r.m.FeedObject(e)
				require.True(r.t, ok, "feed entry %s %s names no record", e.Type, e.ID)
				require.NotNil(r.t, obj)
				fmt.Fprintf(&out, "\nfeed %d %s %s", first+uint64(i), e.Type, e.ID)
			}
		}
	}
	return out.String()
}

// replayCheck rebuilds the state from the log and from a snapshot.
func (r *scriptRunner) replayCheck() string {
	live, err := MarshalState(r.m.State())
	require.NoError(r.t, err)
	re := NewMachine("evt_1", testConfig(), newSeqIDs(99))
	for _, b := range r.log {
		ch, err := UnmarshalChange(b)
		require.NoError(r.t, err)
		re.Apply(ch)
	}
	replayed, err := MarshalState(re.State())
	require.NoError(r.t, err)
	require.Equal(r.t, string(live), string(replayed), "replay differs from live state")
	snap, err := UnmarshalState(live)
	require.NoError(r.t, err)
	again, err := MarshalState(snap)
	require.NoError(r.t, err)
	require.Equal(r.t, string(live), string(again), "snapshot round trip differs")
	requireSameDecode(r.t, live)
	return fmt.Sprintf("replay ok (%d changes)", len(r.log))
}

func codeName(c Code) string {
	switch c {
	case InvalidArgument:
		return "InvalidArgument"
	case NotFound:
		return "NotFound"
	case AlreadyExists:
		return "AlreadyExists"
	case FailedPrecondition:
		return "FailedPrecondition"
	case ResourceExhausted:
		return "ResourceExhausted"
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// TestScripts runs testdata/*.txt: blocks of command lines, "----", and the
// expected output, separated by blank lines. Lines starting with # are
// comments. -rewrite regenerates the expected output.
// Every registered command must run in some script, so each one's result
// type is checked against its registry line.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	clear(scriptRan)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
	for _, k := range commandKinds {
		if !scriptRan[k.name] && len(files) > 1 {
			t.Errorf("no script runs %s", k.name)
		}
	}
}

// scriptRan records the commands the scripts ran successfully.
var scriptRan = map[string]bool{}

func runScript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	r := newScriptRunner(t)
	var out bytes.Buffer
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			i++
			continue
		}
		out.WriteString(l + "\n")
		got := r.run(l)
		i++
		var want []string
		if i < len(lines) && lines[i] == "----" {
			i++
			for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
				want = append(want, lines[i])
				i++
			}
		}
		out.WriteString("----\n" + got + "\n")
		if !*rewrite {
			require.Equal(t, strings.Join(want, "\n"), got, "%s:%d: %s", path, i, l)
		}
		if i < len(lines) {
			out.WriteString("\n")
			for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
				i++
			}
		}
	}
	if *rewrite {
		require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	}
}
