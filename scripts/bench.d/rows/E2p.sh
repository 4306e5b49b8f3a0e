# shellcheck shell=bash
# A row of scripts/bench (sourced by it; helpers in scripts/bench.d/lib.sh).
# ---------------------------------------------------------------- E2p: packs, nothing due

# seed_packs DB POSTS_PER_PACK: --e2p-packs packs that can expire (not admin), created
# 25-47 h ago, each with POSTS_PER_PACK posts of the last hour (likes 0-150), so their
# popularity is far above what would make them due and no post is due either.
seed_packs() {
    migrated "$1"
    sql "$1" -v packs="$e2p_packs" -v per="$2" >/dev/null <<'SQL'
SET session_replication_role = replica;
INSERT INTO users (email, display_name, password_hash)
SELECT 'user' || i || '@example.org', 'User ' || i, 'x' FROM generate_series(1, 1000) i;
INSERT INTO packs (name, creator_id, is_admin, created_at)
SELECT 'pack ' || i, 1 + i % 1000, false, now() - interval '25 hours' - (i::float8 / :packs) * interval '22 hours'
FROM generate_series(1, :packs) i;
INSERT INTO posts (pack_id, author_id, title, body, likes, created_at)
SELECT 1 + (i - 1) / :per, 1 + i % 1000, 'post ' || i, 'a post in a pack', floor(random() * 151)::int,
       now() - random() * interval '1 hour'
FROM generate_series(1, :packs * :per) i;
SQL
    settle "$1"
}

# A run looks only at the packs that may be due (migration 10's pack looks); the first
# run after migrating (the timed runs' warm-up) looks at every pack, and is shown apart.
# Its cost must not grow with the posts of packs that are not due.
row_E2p() {
    local many=100 few=10
    seed_packs e2p_many "$many"
    seed_packs e2p_few "$few"
    expire_config "$work/e2p-many.toml" e2p_many
    expire_config "$work/e2p-few.toml" e2p_few
    local m_ms m_min m_del m_first f_ms f_min f_del f_first
    read -r m_ms m_min m_del m_first <<<"$(e2_times e2p_many "$work/e2p-many.toml")"
    read -r f_ms f_min f_del f_first <<<"$(e2_times e2p_few "$work/e2p-few.toml")"
    local m_packs; m_packs=$(sql e2p_many -c "SELECT count(*) FROM packs")
    # The app deletes one post: the next run checks every look's counted posts.
    sql e2p_many -c "DELETE FROM posts WHERE id = (SELECT min(id) FROM posts)" >/dev/null
    expire_once "$work/e2p-many.toml" || true
    local m_check; m_check=$(last_run e2p_many ms)
    result E2p "nothing due, $e2p_packs packs 25-47 h old × $many posts: run time (job_runs, median of 11)" \
        "$m_ms ms (min $m_min ms; $m_packs packs left, $m_del posts deleted)" "≤ 10 ms" "$(verdict "$m_ms <= 10")"
    result E2p "nothing due, $e2p_packs packs × $few posts: run time (median of 11)" "$f_ms ms (min $f_min ms)" "—" "-"
    result E2p "the first run after migrating, which looks at every pack: $many, $few posts per pack" \
        "$m_first ms, $f_first ms" "—" "-"
    result E2p "the run after the app deleted a post, which checks every look's counted posts ($many posts per pack)" \
        "$m_check ms" "—" "-"
    local ratio; ratio=$(fmt %.2f "$(calc "$m_ms / $f_ms")")
    result E2p "nothing due: $many ÷ $few posts per pack, run time (medians)" \
        "$ratio (minimums: $(fmt %.2f "$(calc "$m_min / $f_min")"))" "≤ 1.5" "$(verdict "$ratio <= 1.5")"
}
