package allocation

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
)

// Bounds. Going over one is an explicit invalid error (422), never a
// silent truncation.
const (
	MaxSlugBytes       = 64
	MaxCatalogRows     = 256
	MaxAliases         = 16
	MaxPhraseBytes     = 512 // a canonical title or an alias
	MaxDeliveryModes   = 16
	MaxModeBytes       = 64
	MaxTitleBytes      = 2048
	MaxProposals       = 128 // per window
	MaxProposalIDBytes = 128
	MaxNoteBodyBytes   = 16 << 10
	MaxReasonBytes     = 512
	MaxPage            = 128
	MaxReceivedSeq     = 1<<53 - 1 // exact in every JSON implementation
	MaxCriterionIndex  = 1<<31 - 1
	// DefaultWindow is a space's reservation TTL unless it sets window_ms.
	DefaultWindow = 15 * time.Second
	MaxWindow     = 10 * time.Minute
	// maxScanPerPage bounds the rows one list page examines.
	maxScanPerPage = 8 * MaxPage
)

// DefaultDeliveryModes are a space's modes unless it lists its own.
var DefaultDeliveryModes = []string{"result"}

// checkSlug: 1-64 bytes of lowercase ASCII letters, digits and '-', not
// starting with '-'. A slug never holds ':', the separator of targets.
func checkSlug(slug string) error {
	ok := slug != "" && len(slug) <= MaxSlugBytes && slug[0] != '-'
	for i := 0; ok && i < len(slug); i++ {
		c := slug[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return errs.Errorf(errs.CodeInvalid, "space slug %q: want 1-%d lowercase letters, digits or '-', not starting with '-'", clip(slug), MaxSlugBytes)
	}
	return nil
}

// checkMode: a delivery mode's shape, 1-64 lowercase ASCII letters,
// digits, '_' or '-'.
func checkMode(mode string) error {
	ok := mode != "" && len(mode) <= MaxModeBytes
	for i := 0; ok && i < len(mode); i++ {
		c := mode[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return errs.Errorf(errs.CodeInvalid, "delivery_mode %q: want 1-%d lowercase letters, digits, '_' or '-'", clip(mode), MaxModeBytes)
	}
	return nil
}

// checkText: valid UTF-8 of at most max bytes.
func checkText(field, s string, max int) error {
	if len(s) > max {
		return errs.Errorf(errs.CodeInvalid, "%s is %d bytes, more than %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return errs.Errorf(errs.CodeInvalid, "%s is not valid UTF-8", field)
	}
	return nil
}

func checkProposalID(id string) error {
	if err := bounds.Identifier("proposal_id", id); err != nil {
		return err
	}
	if len(id) > MaxProposalIDBytes {
		return errs.Errorf(errs.CodeInvalid, "proposal_id is %d bytes, more than %d", len(id), MaxProposalIDBytes)
	}
	return nil
}

// intentDigest identifies a create request for Idempotency-Key replays:
// title, delivery_mode and work_item_id as sent (proposal ids and
// received_seq are transport and left out).
func intentDigest(parts ...*string) string {
	h := sha256.New()
	for _, p := range parts {
		if p == nil {
			h.Write([]byte("-"))
			continue
		}
		h.Write([]byte(strconv.Itoa(len(*p)) + ":" + *p))
	}
	return hex.EncodeToString(h.Sum(nil))
}
