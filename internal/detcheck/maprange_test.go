package detcheck

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

func TestNoOrderDependentMapRange(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	patterns, err := handlerPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &packages.Config{Dir: root, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	ranges := 0
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		for _, f := range p.Syntax {
			if strings.HasSuffix(p.Fset.Position(f.Pos()).Filename, "_test.go") {
				continue
			}
			for _, problem := range unorderedRanges(p.Fset, p.TypesInfo, f) {
				t.Errorf("%s: ranges over a map; sort the keys first, or say why the order cannot matter with an \"order-free:\" comment", problem)
			}
			ranges++
		}
	}
	if ranges == 0 {
		t.Fatal("no files checked: the package load is broken")
	}
}

// unorderedRanges lists the map ranges of f that are neither a safe shape
// nor annotated.
func unorderedRanges(fset *token.FileSet, info *types.Info, f *ast.File) []token.Position {
	annotated := map[int]bool{} // lines with an order-free comment
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, "order-free:") {
				annotated[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	var out []token.Position
	ast.Inspect(f, func(n ast.Node) bool {
		block, ok := n.(*ast.BlockStmt)
		if !ok {
			return true
		}
		for i, stmt := range block.List {
			r, ok := stmt.(*ast.RangeStmt)
			if !ok || !isMap(info, r.X) {
				continue
			}
			line := fset.Position(r.Pos()).Line
			if annotated[line] || annotated[line-1] || copiesIntoMap(info, r) || collectsThenSorts(r, block.List[i+1:]) {
				continue
			}
			out = append(out, fset.Position(r.Pos()))
		}
		return true
	})
	return out
}

func isMap(info *types.Info, e ast.Expr) bool {
	t := info.TypeOf(e)
	if t == nil {
		return false
	}
	_, ok := t.Underlying().(*types.Map)
	return ok
}

// copiesIntoMap: the body only assigns into another map.
func copiesIntoMap(info *types.Info, r *ast.RangeStmt) bool {
	if len(r.Body.List) != 1 {
		return false
	}
	a, ok := r.Body.List[0].(*ast.AssignStmt)
	if !ok || len(a.Lhs) != 1 {
		return false
	}
	idx, ok := a.Lhs[0].(*ast.IndexExpr)
	return ok && isMap(info, idx.X)
}

// collectsThenSorts: the body only appends to a slice, and the statement
// after the loop sorts that slice.
func collectsThenSorts(r *ast.RangeStmt, after []ast.Stmt) bool {
	if len(r.Body.List) != 1 || len(after) == 0 {
		return false
	}
	a, ok := r.Body.List[0].(*ast.AssignStmt)
	if !ok || len(a.Lhs) != 1 || len(a.Rhs) != 1 {
		return false
	}
	target, ok := a.Lhs[0].(*ast.Ident)
	call, isCall := a.Rhs[0].(*ast.CallExpr)
	if !ok || !isCall || !isIdent(call.Fun, "append") {
		return false
	}
	next, ok := after[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	sortCall, ok := next.X.(*ast.CallExpr)
	if !ok || len(sortCall.Args) == 0 {
		return false
	}
	sel, ok := sortCall.Fun.(*ast.SelectorExpr)
	if !ok || !isIdent(sortCall.Args[0], target.Name) {
		return false
	}
	switch name := sel.Sel.Name; name {
	case "Strings", "Ints", "Slice", "SliceStable":
		return true
	default:
		return strings.HasPrefix(name, "Sort")
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
