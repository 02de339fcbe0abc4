package event

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var reasonName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

func TestReasonCatalogueIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	descs := map[string]string{}
	for _, r := range Reasons() {
		if !reasonName.MatchString(r.Name) {
			t.Errorf("reason %q is not UPPER_SNAKE_CASE", r.Name)
		}
		if seen[r.Name] {
			t.Errorf("reason %s listed twice", r.Name)
		}
		seen[r.Name] = true
		if r.Status < 400 || r.Status > 599 {
			t.Errorf("reason %s: status %d is not an error", r.Name, r.Status)
		}
		d := strings.TrimSpace(r.Description)
		if d == "" || strings.Contains(d, "\n") {
			t.Errorf("reason %s: description must be one line", r.Name)
		}
		if prev, dup := descs[d]; dup {
			t.Errorf("reasons %s and %s share a description: two causes never share a reason", prev, r.Name)
		}
		descs[d] = r.Name
	}
	for _, st := range []int{400, 401, 403, 404, 405, 408, 409, 412, 413, 422, 429, 500, 503, 418, 599} {
		if !seen[DefaultReason(st)] {
			t.Errorf("DefaultReason(%d) = %s is not in the catalogue", st, DefaultReason(st))
		}
	}
	for _, st := range []string{EventDraft, EventPublished, EventArchived} {
		if !seen[notPublishedReason(st)] {
			t.Errorf("notPublishedReason(%s) is not in the catalogue", st)
		}
	}
}

// TestEveryReasonInCodeIsCatalogued scans the source of every package that
// answers errors: each reason it names (Reasonf's argument, WithReason's,
// a Reason: field) must be a constant of the catalogue, every constant
// must be in Reasons(), and no 412 may be built without a reason (a
// client cannot tell one precondition from another by message).
func TestEveryReasonInCodeIsCatalogued(t *testing.T) {
	listed := map[string]bool{}
	for _, r := range Reasons() {
		listed[r.Name] = true
	}
	root := filepath.Join("..")
	fset := token.NewFileSet()
	consts := map[string]string{} // ReasonX -> its value
	f, err := parser.ParseFile(fset, "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || !strings.HasPrefix(n.Name, "Reason") {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				consts[n.Name] = v
				if !listed[v] {
					t.Errorf("constant %s (%s) is not in Reasons()", n.Name, v)
				}
			}
		}
	}
	if len(consts) != len(listed) {
		t.Errorf("%d reason constants, %d catalogue entries", len(consts), len(listed))
	}

	// reasonOK reports whether an expression names a catalogued reason.
	reasonOK := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.Ident:
			_, ok := consts[x.Name]
			return ok || x.Name == "reason" // Reasonf's own parameter
		case *ast.SelectorExpr:
			_, ok := consts[x.Sel.Name]
			return ok && isIdent(x.X, "event")
		case *ast.BasicLit:
			v, err := strconv.Unquote(x.Value)
			return err == nil && listed[v]
		case *ast.CallExpr:
			return isIdent(x.Fun, "notPublishedReason")
		}
		return false
	}
	dirs := []string{"event", "directory", "actors", "http", "http/api", "http/bind", "http/pages", "payments", "payments/stripe", "webhooks"}
	scanned := 0
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			scanned++
			ast.Inspect(file, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CallExpr:
					name := callName(x.Fun)
					switch {
					case name == "Reasonf" && len(x.Args) >= 2:
						if !reasonOK(x.Args[1]) {
							t.Errorf("%s: Reasonf with a reason not in the catalogue", fset.Position(x.Pos()))
						}
					case name == "WithReason" && len(x.Args) == 1:
						if !reasonOK(x.Args[0]) {
							t.Errorf("%s: WithReason with a reason not in the catalogue", fset.Position(x.Pos()))
						}
					case name == "Errorf" && len(x.Args) >= 1 && callName(x.Args[0]) == "FailedPrecondition":
						t.Errorf("%s: a FailedPrecondition error without a reason (use Reasonf)", fset.Position(x.Pos()))
					}
				case *ast.CompositeLit:
					if callName(x.Type) != "Error" {
						return true
					}
					var code string
					hasReason := false
					for _, el := range x.Elts {
						kv, ok := el.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						switch callName(kv.Key) {
						case "Code":
							code = callName(kv.Value)
						case "Reason":
							hasReason = true
							if !reasonOK(kv.Value) {
								t.Errorf("%s: Error{Reason: ...} not in the catalogue", fset.Position(kv.Pos()))
							}
						}
					}
					if code == "FailedPrecondition" && !hasReason {
						t.Errorf("%s: a FailedPrecondition error without a reason", fset.Position(x.Pos()))
					}
				}
				return true
			})
		}
	}
	if scanned < 50 {
		t.Fatalf("scanned only %d files: is the test running in event/?", scanned)
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// callName is the last name of an identifier or selector (pkg.Name -> Name).
func callName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}
