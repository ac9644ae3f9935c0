// Command pollcheck reports hand-rolled polls in tests: a for loop whose body
// sleeps, or waits on time.After, time.Tick or a Ticker, between two looks at
// a condition. Such a loop has no deadline of its own or says nothing of what
// it waited for; internal/testkit/wait does both. A loop that lets time pass
// on purpose carries a `//wait:intended <reason>` comment on its `for` line
// or on the line that waits.
//
//	go run ./hack/tools/pollcheck [DIR...]   # default: the current directory
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	roots := os.Args[1:]
	if len(roots) == 0 {
		roots = []string{"."}
	}
	var findings []string
	for _, root := range roots {
		found, err := checkTree(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pollcheck:", err)
			os.Exit(2)
		}
		findings = append(findings, found...)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Fprintf(os.Stderr, "pollcheck: %d hand-rolled polls; wait through internal/testkit/wait, or mark a loop that lets time pass on purpose with //wait:intended <reason>\n", len(findings))
		os.Exit(1)
	}
}

// checkTree checks every _test.go file under root, skipping what is not
// berth's own code.
func checkTree(root string) ([]string, error) {
	var findings []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "vendor", "testdata", "_output", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found, err := checkFile(path, src)
		findings = append(findings, found...)
		return err
	})
	return findings, err
}

// checkFile returns one finding, "path:line: why", per waiting call inside a
// for loop that no //wait:intended comment allows.
func checkFile(path string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	timePkg := importName(file, "time")
	if timePkg == "" {
		return nil, nil
	}
	intended := intendedLines(fset, file)
	tickers := tickerNames(file, timePkg)
	reported := map[token.Pos]bool{}
	var findings []string
	ast.Inspect(file, func(n ast.Node) bool {
		loop, body, post := forParts(n)
		if loop == nil {
			return true
		}
		forLine := fset.Position(loop.Pos()).Line
		check := func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false // a closure's waits are not the loop's
			}
			why := waitsBetweenTurns(n, timePkg, tickers)
			if why == "" || reported[n.Pos()] {
				return true
			}
			reported[n.Pos()] = true
			line := fset.Position(n.Pos()).Line
			if intended[line] || intended[forLine] {
				return true
			}
			findings = append(findings, fmt.Sprintf("%s:%d: a for loop (line %d) %s: a hand-rolled poll", path, line, forLine, why))
			return true
		}
		ast.Inspect(body, check)
		if post != nil {
			ast.Inspect(post, check)
		}
		return true
	})
	sort.Strings(findings)
	return findings, nil
}

// forParts returns a for or range statement, its body and its post statement.
func forParts(n ast.Node) (loop ast.Node, body *ast.BlockStmt, post ast.Stmt) {
	switch l := n.(type) {
	case *ast.ForStmt:
		return l, l.Body, l.Post
	case *ast.RangeStmt:
		return l, l.Body, nil
	}
	return nil, nil, nil
}

// waitsBetweenTurns says how n lets time pass, or "" if it does not: a call
// of time.Sleep, or a receive from time.After, time.Tick or a ticker.
func waitsBetweenTurns(n ast.Node, timePkg string, tickers map[string]bool) string {
	switch e := n.(type) {
	case *ast.CallExpr:
		if isTimeCall(e, timePkg, "Sleep") {
			return "calls time.Sleep"
		}
	case *ast.UnaryExpr:
		if e.Op != token.ARROW {
			return ""
		}
		if call, ok := e.X.(*ast.CallExpr); ok && (isTimeCall(call, timePkg, "After") || isTimeCall(call, timePkg, "Tick")) {
			return "receives from time." + call.Fun.(*ast.SelectorExpr).Sel.Name
		}
		if name := receivedName(e.X); tickers[name] {
			return "receives from the ticker " + name
		}
	}
	return ""
}

func isTimeCall(call *ast.CallExpr, timePkg, fn string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != fn {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == timePkg
}

// receivedName names the channel in `<-t.C` (t) or `<-tick` (tick).
func receivedName(x ast.Expr) string {
	switch c := x.(type) {
	case *ast.SelectorExpr:
		if id, ok := c.X.(*ast.Ident); ok && c.Sel.Name == "C" {
			return id.Name
		}
	case *ast.Ident:
		return c.Name
	}
	return ""
}

// tickerNames collects the names the file gives to tickers: the results of
// time.NewTicker and time.Tick. (Without type information a name stands for
// every variable so named in the file, which is precise enough for tests.)
func tickerNames(file *ast.File, timePkg string) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		var lhs []ast.Expr
		var rhs []ast.Expr
		switch s := n.(type) {
		case *ast.AssignStmt:
			lhs, rhs = s.Lhs, s.Rhs
		case *ast.ValueSpec:
			for _, id := range s.Names {
				lhs = append(lhs, id)
			}
			rhs = s.Values
		default:
			return true
		}
		if len(lhs) != len(rhs) {
			return true
		}
		for i, r := range rhs {
			call, ok := r.(*ast.CallExpr)
			id, isIdent := lhs[i].(*ast.Ident)
			if ok && isIdent && (isTimeCall(call, timePkg, "NewTicker") || isTimeCall(call, timePkg, "Tick")) {
				names[id.Name] = true
			}
		}
		return true
	})
	return names
}

// importName is the name under which file imports path, "" if it does not.
func importName(file *ast.File, path string) string {
	for _, imp := range file.Imports {
		if strings.Trim(imp.Path.Value, `"`) != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return path[strings.LastIndex(path, "/")+1:]
	}
	return ""
}

// intendedLines holds the lines that carry a //wait:intended comment with a
// reason.
func intendedLines(fset *token.FileSet, file *ast.File) map[int]bool {
	lines := map[int]bool{}
	for _, group := range file.Comments {
		for _, c := range group.List {
			reason, ok := strings.CutPrefix(c.Text, "//wait:intended")
			if ok && strings.TrimSpace(reason) != "" && strings.HasPrefix(reason, " ") {
				lines[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	return lines
}
