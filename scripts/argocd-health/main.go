// Command argocd-health runs Argo CD resource health checks (Lua) against their
// tests, evaluating them the way Argo CD does, without depending on Argo CD.
//
//	argocd-health [-cm argocd-cm.yaml] DIR
//
// DIR is laid out like argo-cd's resource_customizations tree:
// DIR/<group>/<Kind>/health.lua, health_test.yaml and testdata/. Every case of
// every health_test.yaml is run; the script is found by the test object's own
// group and kind (as Argo CD's util/lua GetHealthScript does), not by the
// directory the test sits in. Each case runs in these modes:
//
//   - builtin: the health.lua file with Lua's standard libraries open. This is
//     how Argo CD runs the scripts it ships (resource_customizations) and how
//     its own TestLuaHealthScript runs them.
//   - restricted: the same file with the standard libraries closed. This is how
//     Argo CD runs a resource.customizations.health.<group>_<Kind> key of
//     argocd-cm unless resource.customizations.useOpenLibs.<group>_<Kind> is
//     "true": only the package, base and table libraries, plus Argo CD's "safe"
//     os library (time and date only). No string, math, io or os library.
//   - argocd-cm (with -cm): the script taken from that ConfigMap's data, with
//     the libraries its useOpenLibs key asks for.
//
// The results go to stdout as JSON, always; a failed case is also described on
// stderr, and the exit status is 1. Exit status 2 means the tree or a test file
// could not be read.
//
// What is mimicked of Argo CD (util/lua/lua.go, oslib_safe.go; gitops-engine
// pkg/health): the global `obj` is the object as a Lua table (numbers become
// Lua numbers, json.Number a string, null nil); the script runs under a one
// second deadline; its return value, when a table, is encoded with
// layeh.com/gopher-json and decoded into {status, message, deletionMessage};
// an unknown status becomes Unknown "Lua returned an invalid health status"; a
// returned nil means "no health"; another type is an error. "effective" is what
// Argo CD 3.6+ shows once it has applied its terminating-resource rule (a
// deleted object is Progressing "Pending deletion..." unless the script set
// deletionMessage).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
	"sigs.k8s.io/yaml"
)

// HealthStatus is gitops-engine's health.HealthStatus (same JSON names).
type HealthStatus struct {
	Status          string `json:"status,omitempty"`
	Message         string `json:"message,omitempty"`
	DeletionMessage string `json:"deletionMessage,omitempty"`
}

var validStatus = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

type testFile struct {
	Tests []struct {
		InputPath    string        `json:"inputPath"`
		HealthStatus *HealthStatus `json:"healthStatus"`
	} `json:"tests"`
}

type modeResult struct {
	Health *HealthStatus `json:"health"`
	Error  string        `json:"error,omitempty"`
}

type caseResult struct {
	// Key is the directory of the health_test.yaml relative to DIR ("sluice.dev/Connector").
	Key       string                `json:"key"`
	Kind      string                `json:"kind"`
	InputPath string                `json:"inputPath"`
	Name      string                `json:"name"`
	Expected  *HealthStatus         `json:"expected"`
	Results   map[string]modeResult `json:"results"`
	Effective *HealthStatus         `json:"effective"`
	Pass      bool                  `json:"pass"`
	Failures  []string              `json:"failures,omitempty"`
}

type report struct {
	Dir    string       `json:"dir"`
	Modes  []string     `json:"modes"`
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
	Cases  []caseResult `json:"cases"`
}

// script is a health script and whether it runs with the standard libraries open.
type script struct {
	source      string
	useOpenLibs bool
}

func main() {
	cmPath := flag.String("cm", "", "an argocd-cm ConfigMap (or patch) whose resource.customizations.health.* keys are run too")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: argocd-health [-cm argocd-cm.yaml] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	rep, err := run(flag.Arg(0), *cmPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "argocd-health:", err)
		os.Exit(2)
	}
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Println(string(out))
	if rep.Failed > 0 {
		fmt.Fprintf(os.Stderr, "argocd-health: %d of %d cases failed\n", rep.Failed, rep.Failed+rep.Passed)
		os.Exit(1)
	}
}

func run(dir, cmPath string) (*report, error) {
	var cm map[string]string
	modes := []string{"builtin", "restricted"}
	if cmPath != "" {
		var err error
		if cm, err = readConfigMapData(cmPath); err != nil {
			return nil, err
		}
		modes = append(modes, "argocd-cm")
	}
	rep := &report{Dir: dir, Modes: modes, Cases: []caseResult{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "health.lua" {
			return nil
		}
		caseDir := filepath.Dir(path)
		key, err := filepath.Rel(dir, caseDir)
		if err != nil {
			return err
		}
		testPath := filepath.Join(caseDir, "health_test.yaml")
		raw, err := os.ReadFile(testPath)
		if err != nil {
			return fmt.Errorf("%s has no health_test.yaml: %w", path, err)
		}
		var tf testFile
		if err := yaml.UnmarshalStrict(raw, &tf); err != nil {
			return fmt.Errorf("%s: %w", testPath, err)
		}
		if len(tf.Tests) == 0 {
			return fmt.Errorf("%s: no tests", testPath)
		}
		for _, t := range tf.Tests {
			c := runCase(dir, cm, modes, filepath.ToSlash(key), caseDir, t.InputPath, t.HealthStatus)
			rep.Cases = append(rep.Cases, c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(rep.Cases, func(i, j int) bool { return rep.Cases[i].Name < rep.Cases[j].Name })
	for _, c := range rep.Cases {
		if c.Pass {
			rep.Passed++
		} else {
			rep.Failed++
			for _, f := range c.Failures {
				fmt.Fprintf(os.Stderr, "FAIL %s %s\n", c.Name, f)
			}
		}
	}
	if len(rep.Cases) == 0 {
		return nil, fmt.Errorf("no health.lua under %s", dir)
	}
	return rep, nil
}

func runCase(dir string, cm map[string]string, modes []string, key, caseDir, inputPath string, expected *HealthStatus) caseResult {
	c := caseResult{
		Key:       key,
		InputPath: inputPath,
		Name:      key + "/" + inputPath,
		Expected:  expected,
		Results:   map[string]modeResult{},
	}
	fail := func(format string, args ...any) { c.Failures = append(c.Failures, fmt.Sprintf(format, args...)) }
	if expected == nil {
		fail("has no healthStatus in health_test.yaml")
	}
	raw, err := os.ReadFile(filepath.Join(caseDir, inputPath))
	if err != nil {
		fail("%v", err)
		return c
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		fail("%s: %v", inputPath, err)
		return c
	}
	group, kind := groupKind(obj)
	c.Kind = kind
	cmKey := kind
	if group != "" {
		cmKey = group + "_" + kind
	}
	var last *HealthStatus
	for _, mode := range modes {
		var s script
		var found bool
		switch mode {
		case "builtin", "restricted":
			// Argo CD's built-in lookup: resource_customizations/<group>/<Kind>/health.lua.
			src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(configMapKey(group, kind)), "health.lua"))
			if err == nil {
				s, found = script{source: string(src), useOpenLibs: mode == "builtin"}, true
			}
		case "argocd-cm":
			src, ok := cm["resource.customizations.health."+cmKey]
			if ok && src != "" {
				s, found = script{source: src, useOpenLibs: cm["resource.customizations.useOpenLibs."+cmKey] == "true"}, true
			}
		}
		if !found {
			c.Results[mode] = modeResult{Error: fmt.Sprintf("no health script for %s", configMapKey(group, kind))}
			fail("[%s] no health script for %s (apiVersion/kind of %s)", mode, configMapKey(group, kind), inputPath)
			continue
		}
		hs, err := executeHealthLua(obj, s)
		mr := modeResult{Health: hs}
		if err != nil {
			mr.Error = err.Error()
			fail("[%s] script error: %v", mode, err)
		} else if expected != nil && (hs == nil || *hs != *expected) {
			fail("[%s]\n  - expected: %s\n  + actual:   %s", mode, show(expected), show(hs))
		}
		c.Results[mode] = mr
		if hs != nil {
			last = hs
		}
	}
	c.Effective = effectiveHealth(obj, last)
	c.Pass = len(c.Failures) == 0
	return c
}

func show(h *HealthStatus) string {
	if h == nil {
		return "nil"
	}
	b, _ := json.Marshal(h)
	return string(b)
}

func groupKind(obj map[string]any) (string, string) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group := ""
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	return group, kind
}

// configMapKey is Argo CD's GetConfigMapKey: "<group>/<Kind>", or "<Kind>" for the core group.
func configMapKey(group, kind string) string {
	if group == "" {
		return kind
	}
	return group + "/" + kind
}

// readConfigMapData reads the data of a ConfigMap manifest (a full one or a patch).
func readConfigMapData(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cm struct {
		Kind     string                `json:"kind"`
		Metadata struct{ Name string } `json:"metadata"`
		Data     map[string]string     `json:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cm.Kind != "ConfigMap" || cm.Metadata.Name != "argocd-cm" {
		return nil, fmt.Errorf("%s: not the argocd-cm ConfigMap (kind %q, name %q)", path, cm.Kind, cm.Metadata.Name)
	}
	return cm.Data, nil
}

// executeHealthLua runs a health script as Argo CD's VM.ExecuteHealthLua does.
func executeHealthLua(obj map[string]any, s script) (*HealthStatus, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !s.useOpenLibs})
	defer l.Close()
	// Argo CD opens these whatever useOpenLibs says.
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.OsLibName, openSafeOs},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, fmt.Errorf("opening library %q: %w", lib.name, err)
		}
	}
	// `local os = require("os")` gives the safe os library.
	l.PreloadModule(lua.OsLibName, safeOsLoader)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))

	fn, err := l.LoadString(s.source)
	if err == nil {
		l.Push(fn)
		err = l.PCall(0, lua.MultRet, nil)
	}
	if err != nil {
		// Argo CD drops the Lua stack trace of run-time errors.
		var apiErr *lua.ApiError
		if errors.As(err, &apiErr) && apiErr.Type == lua.ApiErrorRun {
			apiErr.StackTrace = ""
			err = apiErr
		}
		return nil, err
	}

	ret := l.Get(-1)
	switch ret.Type() {
	case lua.LTTable:
		encoded, err := luajson.Encode(ret)
		if err != nil {
			return nil, err
		}
		hs := &HealthStatus{}
		if err := json.Unmarshal(encoded, hs); err != nil {
			// An empty table encodes as [] and decodes as an empty status.
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) && typeErr.Value == "array" {
				return &HealthStatus{}, nil
			}
			return nil, err
		}
		if !validStatus[hs.Status] {
			return &HealthStatus{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
		}
		return hs, nil
	case lua.LTNil:
		return nil, nil
	}
	return nil, fmt.Errorf("expect table output from Lua script, not %s", ret.Type().String())
}

// effectiveHealth applies gitops-engine's terminating-resource rule (Argo CD 3.6+).
func effectiveHealth(obj map[string]any, hs *HealthStatus) *HealthStatus {
	if hs == nil {
		return nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil || meta["deletionTimestamp"] == nil {
		return hs
	}
	var finalizers []string
	if list, ok := meta["finalizers"].([]any); ok {
		for _, f := range list {
			if s, ok := f.(string); ok {
				if s == "argocd.argoproj.io/hook-finalizer" {
					return hs
				}
				finalizers = append(finalizers, s)
			}
		}
	}
	if hs.DeletionMessage != "" {
		return &HealthStatus{Status: hs.Status, Message: hs.DeletionMessage}
	}
	msg := "Pending deletion"
	if len(finalizers) > 0 {
		msg += "; blocked by finalizers: " + strings.Join(finalizers, ", ")
	}
	return &HealthStatus{Status: "Progressing", Message: msg}
}

// toLua converts a decoded JSON/YAML value the way Argo CD's decodeValue does.
func toLua(l *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case json.Number:
		return lua.LString(x)
	case float64:
		return lua.LNumber(x)
	case int:
		return lua.LNumber(x)
	case int32:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case []any:
		t := l.CreateTable(len(x), 0)
		for _, item := range x {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(x))
		for k, item := range x {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

// --- Argo CD's "safe" os library: time and date only ---------------------------

var safeOsFuncs = map[string]lua.LGFunction{"time": osTime, "date": osDate}

// openSafeOs mirrors Argo CD's OpenSafeOs, which registers the functions under
// the *table* library's name. The table library is loaded by then, so
// RegisterModule returns it unchanged and this adds nothing: with the libraries
// closed there is no `os` global and require("os") is the only way to the safe
// os library (with them open, `os` is gopher-lua's full os library).
func openSafeOs(l *lua.LState) int {
	l.Push(l.RegisterModule(lua.TabLibName, safeOsFuncs))
	return 1
}

func safeOsLoader(l *lua.LState) int {
	l.Push(l.SetFuncs(l.NewTable(), safeOsFuncs))
	return 1
}

func intField(t *lua.LTable, key string, def int) int {
	if n, ok := t.RawGetString(key).(lua.LNumber); ok {
		return int(n)
	}
	return def
}

func osTime(l *lua.LState) int {
	if l.GetTop() == 0 {
		l.Push(lua.LNumber(time.Now().Unix()))
		return 1
	}
	t := l.CheckTable(1)
	d := time.Date(intField(t, "year", -1), time.Month(intField(t, "month", -1)), intField(t, "day", -1),
		intField(t, "hour", 12), intField(t, "min", 0), intField(t, "sec", 0), 0, time.Local)
	l.Push(lua.LNumber(d.Unix()))
	return 1
}

var strftimeLayouts = map[byte]string{
	'a': "Mon", 'A': "Monday", 'b': "Jan", 'B': "January", 'c': "02 Jan 06 15:04 MST", 'd': "02",
	'F': "2006-01-02", 'H': "15", 'I': "03", 'm': "01", 'M': "04", 'p': "PM", 'S': "05",
	'X': "15:04:05", 'y': "06", 'Y': "2006", 'z': "-0700", 'Z': "MST",
}

func osDate(l *lua.LState) int {
	t := time.Now()
	format := "%c"
	if l.GetTop() >= 1 {
		format = l.CheckString(1)
		if strings.HasPrefix(format, "!") {
			t = t.UTC()
			format = format[1:]
		}
		if l.GetTop() >= 2 {
			t = time.Unix(l.CheckInt64(2), 0)
		}
		if strings.HasPrefix(format, "*t") {
			r := l.NewTable()
			for k, v := range map[string]int{
				"year": t.Year(), "month": int(t.Month()), "day": t.Day(), "hour": t.Hour(),
				"min": t.Minute(), "sec": t.Second(), "wday": int(t.Weekday()) + 1, "yday": t.YearDay(),
			} {
				r.RawSetString(k, lua.LNumber(v))
			}
			r.RawSetString("isdst", lua.LFalse)
			l.Push(r)
			return 1
		}
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch c := format[i]; {
		case c == '%':
			b.WriteByte('%')
		case c == 'w':
			fmt.Fprint(&b, int(t.Weekday()))
		case strftimeLayouts[c] != "":
			b.WriteString(t.Format(strftimeLayouts[c]))
		default:
			b.WriteByte('%')
			b.WriteByte(c)
		}
	}
	l.Push(lua.LString(b.String()))
	return 1
}
