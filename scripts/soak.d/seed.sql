-- Starting data of the soak: 300 users (some spelled with capitals), a few whose
-- address is not a single mailbox, 40 communities of 6 members each with a
-- leader, 20 packs, and a session for every tenth user.
INSERT INTO public.users (email, display_name, password_hash)
SELECT CASE WHEN i % 10 = 0 THEN format('User%s@Example.org', i) ELSE format('user%s@example.org', i) END,
       format('User %s', i), 'not-a-real-hash'
FROM generate_series(1, 300) AS i;

-- Addresses caretaker must refuse ("invalid address", no mail attempted).
INSERT INTO public.users (email, display_name, password_hash) VALUES
    ('bad1@@example.org', 'Bad 1', 'x'),
    ('bad2@example.org@example.net', 'Bad 2', 'x'),
    ('bad 3@example.org', 'Bad 3', 'x'),
    ('bad4', 'Bad 4', 'x');

INSERT INTO public.communities (name)
SELECT format('community %s', c) FROM generate_series(1, 40) AS c;

INSERT INTO public.community_members (community_id, user_id, joined_at)
SELECT c.id, 1 + ((c.id * 7 + k * 13) % 300), now() - (k || ' minutes')::interval
FROM public.communities c, generate_series(0, 5) AS k
ON CONFLICT DO NOTHING;

UPDATE public.communities c
SET leader_id = (SELECT m.user_id FROM public.community_members m WHERE m.community_id = c.id
                 ORDER BY m.joined_at DESC LIMIT 1);

INSERT INTO public.packs (name, creator_id, is_admin)
SELECT format('pack %s', p), p, p % 10 = 0 FROM generate_series(1, 20) AS p;

INSERT INTO public.sessions (user_id) SELECT i FROM generate_series(1, 300, 10) AS i;
