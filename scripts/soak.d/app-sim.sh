#!/usr/bin/env bash
# The soak's app simulator: every ~200 ms one psql session runs a small batch
# of independent statements (autocommit; a failing one does not stop the rest),
# chosen at random like a busy community app would issue them:
#   posts into random packs, likes (some on posts and packs at their deadline,
#   racing the expiry), new packs and pack members, new sessions and
#   last_seen_at bumps, logouts, "forgot password" requests for live, unknown,
#   deleted and unmailable accounts (some in capitals), members joining and
#   leaving communities, leaders leaving or deleted, successors, new
#   communities (some without a leader), new users.
# It leaves alone the rows the app-surprise fault adds as witnesses (a pack named
# and a post titled 'witness'), whose deadlines no-blocked-stall relies on.
# Likes only grow and members only join packs, which the checks rely on.
# With MODE `posts` (the partitioned layout's database) only the posts, likes, packs
# and pack members.
# Usage: app-sim.sh CONNINFO STOP_FILE ERROR_LOG STATS_FILE [MODE]
set -u
conninfo="$1 application_name=soak-app" stop=$2 errors=$3 stats=$4 mode=${5:-all}
ticks=0 sessions_failed=0

chance() { [ $((RANDOM % $1)) = 0 ]; }   # true one time in $1

random_user="(SELECT id FROM public.users WHERE deleted_at IS NULL ORDER BY random() LIMIT 1)"
random_community="(SELECT id FROM public.communities WHERE archived_at IS NULL ORDER BY random() LIMIT 1)"

while [ ! -e "$stop" ]; do
    ticks=$((ticks + 1))
    u=$((1 + RANDOM % 300))
    # An app holds its locks briefly: waiting 2 s for a row the soak holds locked is enough.
    sql="SET lock_timeout = '2s';
INSERT INTO public.posts (pack_id, author_id, title, body)
         SELECT id, $u, 'soak post', 'hello' FROM public.packs WHERE name <> 'witness' ORDER BY random() LIMIT $((1 + RANDOM % 2));
UPDATE public.posts SET likes = likes + 1 + (random() * 2)::int
         WHERE id IN (SELECT id FROM public.posts WHERE title IS DISTINCT FROM 'witness' ORDER BY random() LIMIT 2);
UPDATE public.posts SET likes = likes + 1
         WHERE id = (SELECT id FROM public.posts WHERE likes = 0 AND created_at <= now() - interval '29 seconds'
                     AND title IS DISTINCT FROM 'witness'
                     ORDER BY created_at DESC LIMIT 1);
"
    if chance 3; then sql+="UPDATE public.posts SET likes = likes + 1
         WHERE id = (SELECT x.id FROM public.posts x JOIN public.packs p ON p.id = x.pack_id
                     WHERE NOT p.is_admin AND p.name <> 'witness' ORDER BY p.created_at, x.id LIMIT 1);
"; fi
    if chance 4; then
        admin=false; chance 20 && admin=true
        sql+="WITH p AS (INSERT INTO public.packs (name, creator_id, is_admin) VALUES ('soak pack', $u, $admin) RETURNING id)
         INSERT INTO public.pack_members (pack_id, user_id)
         SELECT p.id, v.u FROM p, (VALUES ($u), ($((1 + RANDOM % 300)))) AS v(u) ON CONFLICT DO NOTHING;
"
    fi
    if chance 2; then sql+="INSERT INTO public.pack_members (pack_id, user_id)
         SELECT id, $((1 + RANDOM % 300)) FROM public.packs WHERE name <> 'witness' ORDER BY random() LIMIT 1
         ON CONFLICT DO NOTHING;
"; fi
    if [ "$mode" = all ]; then
    if chance 2; then sql+="INSERT INTO public.sessions (user_id) SELECT $random_user;
"; fi
    sql+="UPDATE public.sessions SET last_seen_at = now()
         WHERE id IN (SELECT id FROM public.sessions WHERE revoked_at IS NULL ORDER BY random() LIMIT 2)
           AND revoked_at IS NULL;
"
    if chance 10; then sql+="UPDATE public.sessions SET revoked_at = now(), revoked_reason = 'logout'
         WHERE id = (SELECT id FROM public.sessions WHERE revoked_at IS NULL ORDER BY random() LIMIT 1) AND revoked_at IS NULL;
"; fi
    if chance 4; then
        kind=$((RANDOM % 20))
        if [ $kind -lt 14 ]; then
            sql+="INSERT INTO public.password_reset_requests (email)
         SELECT CASE WHEN random() < 0.2 THEN upper(email) ELSE email END FROM public.users
         WHERE deleted_at IS NULL ORDER BY random() LIMIT 1;
"
        elif [ $kind -lt 17 ]; then
            sql+="INSERT INTO public.password_reset_requests (email) VALUES ('nobody$RANDOM@example.org');
"
        elif [ $kind -lt 19 ]; then
            sql+="INSERT INTO public.password_reset_requests (email)
         SELECT email FROM public.users WHERE deleted_at IS NOT NULL ORDER BY random() LIMIT 1;
"
        else
            sql+="INSERT INTO public.password_reset_requests (email)
         SELECT email FROM public.users WHERE email NOT LIKE '%@%.%' OR email LIKE '%@%@%' OR email LIKE '% %' ORDER BY random() LIMIT 1;
"
        fi
    fi
    if chance 8; then sql+="DELETE FROM public.community_members
         WHERE (community_id, user_id) = (SELECT community_id, user_id FROM public.community_members ORDER BY random() LIMIT 1);
"; fi
    if chance 15; then sql+="DELETE FROM public.community_members m USING public.communities c
         WHERE m.community_id = c.id AND m.user_id = c.leader_id AND c.id = $random_community;
"; fi
    if chance 60; then sql+="UPDATE public.users SET deleted_at = now()
         WHERE id = (SELECT leader_id FROM public.communities WHERE archived_at IS NULL AND leader_id IS NOT NULL
                     ORDER BY random() LIMIT 1) AND deleted_at IS NULL;
"; fi
    if chance 5; then sql+="INSERT INTO public.community_members (community_id, user_id)
         SELECT c.id, u.id FROM $random_community AS c(id), $random_user AS u(id) WHERE c.id IS NOT NULL ON CONFLICT DO NOTHING;
"; fi
    if chance 20; then sql+="UPDATE public.communities c
         SET successor_id = (SELECT m.user_id FROM public.community_members m WHERE m.community_id = c.id ORDER BY random() LIMIT 1)
         WHERE c.id = $random_community;
"; fi
    if chance 40; then
        leader="min(id)"; chance 2 && leader="NULL::bigint"
        sql+="WITH u AS (SELECT id FROM public.users WHERE deleted_at IS NULL ORDER BY random() LIMIT 4),
              c AS (INSERT INTO public.communities (name, leader_id) SELECT 'soak community', $leader FROM u RETURNING id)
         INSERT INTO public.community_members (community_id, user_id) SELECT c.id, u.id FROM c, u;
"
    fi
    if chance 10; then sql+="INSERT INTO public.users (email, display_name, password_hash)
         VALUES ('new-$$-$ticks@example.org', 'New user $ticks', 'not-a-real-hash');
"; fi
    fi
    psql -X -q -v ON_ERROR_STOP=0 "$conninfo" <<<"$sql" >/dev/null 2>>"$errors" || sessions_failed=$((sessions_failed + 1))
    echo "ticks=$ticks sessions_failed=$sessions_failed" >"$stats"
    sleep 0.2
done
