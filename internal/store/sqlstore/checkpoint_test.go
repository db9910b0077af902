package sqlstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"verdict/internal/domain"
)

// TestCheckpointerCopiesTheLogBack: writes reach the database file soon after their commit,
// copied from the write-ahead log by the checkpointer, not by a commit that took the log past
// a size (these writes are far below the writer's own threshold).
func TestCheckpointerCopiesTheLogBack(t *testing.T) {
	s := testSQLite(t)
	ctx := context.Background()
	var path string
	if err := s.db.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	before := size(path)
	for i := range 300 {
		o := &domain.Organization{Name: fmt.Sprintf("Checkpoint %d", i), Slug: fmt.Sprintf("checkpoint-%d", i),
			Plan: domain.PlanFree, CreatedAt: time.Now()}
		if err := s.Organizations().Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if wal := size(path + "-wal"); wal == 0 {
		t.Fatalf("the write-ahead log of %s is empty after 300 writes", filepath.Base(path))
	}
	deadline := time.Now().Add(5 * time.Second)
	for size(path) == before {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes for 5 s after 300 writes: nothing checkpointed them", before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("database file: %d bytes before, %d after the checkpoint", before, size(path))
}
