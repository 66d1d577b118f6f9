package retrydriver

import "fmt"

// State is where an item is in its life, as stored: retry.State's values,
// which a store writes to its state column. retrydriver cannot name
// retry.State (package retry imports this one), so it has its own type;
// the Scheduler converts at the seam, and a test in package retry holds
// the two sets of values equal.
type State int

// The states of an item (retry.State documents each). Their numeric
// values are stored in the database and must not change.
const (
	Pending   State = 0
	Scheduled State = 1
	Leased    State = 2
	Done      State = 3
)

var stateNames = [...]string{"pending", "scheduled", "leased", "done"}

// String returns the state's name, as retry.State spells it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Op is how a lease was settled (Record.SettledOp): retry.Op's values, and
// OpExpire, the Scheduler's own settlement of a lease that ran out too
// often in a row.
type Op int

// The lease operations. Their numeric values are stored in the database
// (as the record of how a lease was settled) and must not change.
const (
	OpSucceed Op = 1
	OpFail    Op = 2
	OpRelease Op = 3
	OpExtend  Op = 4
	OpExpire  Op = 5
)

// String returns the operation's name, as retry.Op spells it.
func (o Op) String() string {
	switch o {
	case OpSucceed:
		return "succeed"
	case OpFail:
		return "fail"
	case OpRelease:
		return "release"
	case OpExtend:
		return "extend"
	case OpExpire:
		return "expire"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}
