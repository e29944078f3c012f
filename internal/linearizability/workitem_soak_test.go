package linearizability

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestWorkItemSoakHistories checks again the work-item histories a soak
// once reported Illegal (testdata/soak, one tenant each, taken from the
// porcupine visualizations the soak wrote). All three were linearizable:
// the model's Equal saw only the first 128 items of a tenant (see
// describeWITenant). Each is checked by operations and by events.
func TestWorkItemSoakHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/soak/workitem-*.json.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no soak histories in testdata/soak: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ops := readWISoakHistory(t, file)
			// A minute, not checkBoth's 5 s: the largest takes seconds
			// under -race on a busy machine, and Unknown is not a pass.
			model := WorkItemModel()
			if res := porcupine.CheckOperationsTimeout(model, ops, time.Minute); res != porcupine.Ok {
				t.Fatalf("%d operations are %s", len(ops), res)
			}
			if res := porcupine.CheckEventsTimeout(model, toEvents(ops), time.Minute); res != porcupine.Ok {
				t.Fatalf("%d operations as events are %s", len(ops), res)
			}
		})
	}
}

// wiSoakOp is one operation as the visualization shows it: the client,
// the call and return times and DescribeOperation's text.
type wiSoakOp struct {
	Client int    `json:"client"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	Op     string `json:"op"`
}

func readWISoakHistory(t *testing.T, file string) []porcupine.Operation {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var raw []wiSoakOp
	if err := json.NewDecoder(z).Decode(&raw); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	ops := make([]porcupine.Operation, len(raw))
	for i, r := range raw {
		in, out, err := parseWIDescription(r.Op)
		if err != nil {
			t.Fatalf("%s: operation %d: %v", file, i, err)
		}
		ret := r.Return
		if IsUnknown(out) {
			ret = Pending // the visualization draws it to the end
		}
		ops[i] = wiOp(r.Client, r.Call, ret, in, out)
	}
	return ops
}

var (
	wiSubmitText   = regexp.MustCompile(`^submit\((\S+) key (\S+)/(\d+) id (\S+) prio (-?\d+) dep "(\S*)" cap (\d+)\)$`)
	wiCompleteText = regexp.MustCompile(`^complete\((\S+) (\S+) attempt (\d+) fence (\d+)\)$`)
	wiCancelText   = regexp.MustCompile(`^cancel\((\S+) (\S+)\)$`)
	wiTenantOnly   = regexp.MustCompile(`^(claim|list)\((\S+)\)$`)
	wiAdmitText    = regexp.MustCompile(`^(\S+) seq (\d+) in flight (\d+)$`)
	wiClaimText    = regexp.MustCompile(`^(\S+) (\S+) attempt (\d+) fence (\d+)$`)
)

// parseWIDescription reads back describeWIInput and describeWIOutput.
func parseWIDescription(text string) (WIInput, any, error) {
	call, result, ok := strings.Cut(text, " -> ")
	if !ok {
		return WIInput{}, nil, fmt.Errorf("no result in %q", text)
	}
	var in WIInput
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	switch m := []([]string){wiSubmitText.FindStringSubmatch(call), wiCompleteText.FindStringSubmatch(call), wiCancelText.FindStringSubmatch(call), wiTenantOnly.FindStringSubmatch(call)}; {
	case m[0] != nil:
		s := m[0]
		in = WIInput{Kind: WISubmit, Tenant: s[1], Key: s[2], Variant: int(num(s[3])), ID: s[4], Priority: num(s[5]), Dep: s[6], Cap: num(s[7])}
	case m[1] != nil:
		s := m[1]
		in = WIInput{Kind: WIComplete, Tenant: s[1], ID: s[2], Attempt: num(s[3]), Fence: uint64(num(s[4]))}
	case m[2] != nil:
		in = WIInput{Kind: WICancel, Tenant: m[2][1], ID: m[2][2]}
	case m[3] != nil:
		in = WIInput{Kind: WIClaim, Tenant: m[3][2]}
		if m[3][1] == "list" {
			in.Kind = WIList
		}
	default:
		return WIInput{}, nil, fmt.Errorf("unknown call %q", call)
	}
	if result == "? (outcome unknown)" {
		return in, UnknownOutput{}, nil
	}
	if strings.HasPrefix(result, "[") && strings.HasSuffix(result, "]") {
		return in, WIOutput{List: result[1 : len(result)-1]}, nil
	}
	if s := wiAdmitText.FindStringSubmatch(result); s != nil {
		return in, WIOutput{Decision: s[1], Seq: uint64(num(s[2])), InFlight: num(s[3])}, nil
	}
	if s := wiClaimText.FindStringSubmatch(result); s != nil {
		return in, WIOutput{Decision: s[1], ID: s[2], Attempt: num(s[3]), Fence: uint64(num(s[4]))}, nil
	}
	if strings.ContainsAny(result, " []") {
		return WIInput{}, nil, fmt.Errorf("unknown result %q", result)
	}
	return in, WIOutput{Decision: result}, nil
}

func TestParseWIDescriptionReadsWhatIsDescribed(t *testing.T) {
	for _, tc := range []struct {
		in  WIInput
		out any
	}{
		{WIInput{Kind: WISubmit, Tenant: "t", Key: "k1", Variant: 1, ID: "i1", Priority: -1, Dep: "i0", Cap: 3}, WIOutput{Decision: WIReplayed, Seq: 4, InFlight: 2}},
		{WIInput{Kind: WISubmit, Tenant: "t", Key: "k1", ID: "i1", Cap: 3}, WIOutput{Decision: WIExhausted}},
		{WIInput{Kind: WIClaim, Tenant: "t"}, WIOutput{Decision: WIOK, ID: "i1", Attempt: 2, Fence: 77}},
		{WIInput{Kind: WIClaim, Tenant: "t"}, UnknownOutput{}},
		{WIInput{Kind: WIComplete, Tenant: "t", ID: "i1", Attempt: 2, Fence: 77}, WIOutput{Decision: WIStaleFence}},
		{WIInput{Kind: WICancel, Tenant: "t", ID: "i1"}, WIOutput{Decision: WIConflict}},
		{WIInput{Kind: WIList, Tenant: "t"}, WIOutput{List: "i1:pending:0:true;i2:claimed:1:false"}},
	} {
		text := WorkItemModel().DescribeOperation(tc.in, tc.out)
		in, out, err := parseWIDescription(text)
		if err != nil || in != tc.in || out != tc.out {
			t.Errorf("%q reads back as %+v -> %+v (%v)", text, in, out, err)
		}
	}
}
