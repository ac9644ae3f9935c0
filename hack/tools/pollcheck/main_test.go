package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const header = "package p\n\nimport (\n\t\"context\"\n\t\"time\"\n)\n\nvar _ = context.Background\n\n"

func TestReportsHandRolledPolls(t *testing.T) {
	for name, body := range map[string]string{
		"sleep in an endless loop": `func f(ok func() bool) {
	for {
		if ok() {
			return
		}
		time.Sleep(time.Millisecond)
	}
}`,
		"sleep in a conditional loop": `func f(ok func() bool) {
	for !ok() {
		time.Sleep(time.Millisecond)
	}
}`,
		"sleep in the post statement": `func f(ok func() bool) {
	for i := 0; !ok(); time.Sleep(time.Millisecond) {
		i++
	}
}`,
		"sleep in a range loop": `func f(ok func() bool) {
	for range 100 {
		if ok() {
			return
		}
		time.Sleep(time.Millisecond)
	}
}`,
		"time.After in a select": `func f(ok func() bool, done chan error) {
	for !ok() {
		select {
		case <-done:
			return
		case <-time.After(time.Millisecond):
		}
	}
}`,
		"a ticker": `func f(ok func() bool) {
	retry := time.NewTicker(time.Millisecond)
	defer retry.Stop()
	for !ok() {
		<-retry.C
	}
}`,
		"time.Tick": `func f(ok func() bool) {
	tick := time.Tick(time.Millisecond)
	for !ok() {
		<-tick
	}
}`,
		"an imported alias": `func f(ok func() bool) {
	for !ok() {
		clock.Sleep(clock.Millisecond)
	}
}`,
		"a reason-less mark": `func f(ok func() bool) {
	for !ok() {
		time.Sleep(time.Millisecond) //wait:intended
	}
}`,
	} {
		t.Run(name, func(t *testing.T) {
			src := header + body + "\n"
			if name == "an imported alias" {
				src = strings.Replace(src, "\t\"time\"\n", "\tclock \"time\"\n", 1)
			}
			findings, err := checkFile("x_test.go", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(findings) != 1 || !strings.Contains(findings[0], "hand-rolled poll") {
				t.Fatalf("findings %q, want one hand-rolled poll", findings)
			}
		})
	}
}

func TestAllowsWhatIsNotAPoll(t *testing.T) {
	for name, body := range map[string]string{
		"a sleep outside a loop": `func f() {
	time.Sleep(time.Millisecond)
}`,
		"a deadline made before the loop": `func f(events chan int) {
	deadline := time.After(time.Minute)
	for {
		select {
		case <-events:
		case <-deadline:
			return
		}
	}
}`,
		"a sleep in a goroutine a loop starts": `func f() {
	for range 3 {
		go func() { time.Sleep(time.Millisecond) }()
	}
}`,
		"a mark on the waiting line": `func f() {
	for range 10 {
		time.Sleep(time.Millisecond) //wait:intended lets renewals pass
	}
}`,
		"a mark on the for line": `func f(c chan int) {
	for range 10 { //wait:intended lets renewals pass
		select {
		case <-c:
		case <-time.After(time.Millisecond):
		}
	}
}`,
		"a loop with no waiting": `func f(xs []int) (n int) {
	for _, x := range xs {
		n += x
	}
	return n
}`,
	} {
		t.Run(name, func(t *testing.T) {
			findings, err := checkFile("x_test.go", []byte(header+body+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if len(findings) != 0 {
				t.Fatalf("findings %q, want none", findings)
			}
		})
	}
}

func TestChecksOnlyTestFilesOutsideTestdata(t *testing.T) {
	dir := t.TempDir()
	poll := header + "func f(ok func() bool) {\n\tfor !ok() {\n\t\ttime.Sleep(time.Millisecond)\n\t}\n}\n"
	for _, path := range []string{"a/poll_test.go", "a/poll.go", "a/testdata/poll_test.go"} {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(poll), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	findings, err := checkTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || !strings.HasPrefix(findings[0], filepath.Join(dir, "a/poll_test.go")+":") {
		t.Fatalf("findings %q, want only a/poll_test.go", findings)
	}
}
