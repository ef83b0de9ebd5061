-- The differential corpus (format: corpus_test.go). Tables (data_test.go):
-- orders, customers, events, "Region Targets", edge_lists, evolving,
-- sparse, empty_table in the default database; profiles and customers
-- (other rows) in analytics. Every ORDER BY of a query marked "ordered"
-- ends with a unique key, so that the expected order is fully defined, and
-- every LIMIT sits under such an ORDER BY.
--
-- Queries marked "-- bug:" are known Lakestream bugs; the crash cases
-- among them are in "known bugs" at the end, the others next to the
-- feature they concern.

-- ============================================================ scans
-- name: scan_all_orders
SELECT * FROM orders;

-- name: scan_all_customers
SELECT * FROM customers;

-- name: scan_all_events
SELECT * FROM events;

-- name: scan_all_profiles
SELECT * FROM analytics.profiles;

-- name: scan_projection_reordered
SELECT flag, tags, id, created FROM orders;

-- name: scan_expression_only
SELECT id * 2 + 1 AS x, small::INTEGER + seq AS y FROM events;

-- name: scan_count_star
SELECT count(*) AS n FROM events;

-- name: scan_count_columns
SELECT count(*), count(customer_id), count(amount), count(status), count(created), count(day),
       count(qty), count(discount), count(tags), count(flag)
FROM orders;

-- name: scan_blob
SELECT id, payload, octet_length(payload) AS len FROM events WHERE payload IS NOT NULL;

-- name: scan_edge_strings
SELECT id, strs FROM edge_lists;

-- name: scan_edge_count
SELECT count(*) AS n, count(strs) AS strs, sum(len(strs)) AS elems FROM edge_lists;

-- ============================================================ where
-- name: where_eq_int
SELECT * FROM orders WHERE customer_id = 42;

-- name: where_lt_ge_or
SELECT id, qty FROM orders WHERE qty < 0 OR qty >= 52;

-- name: where_decimal_range
SELECT id, amount FROM orders WHERE amount > 50000.00 AND amount <= 51000;

-- name: where_negative_decimal
SELECT id, amount FROM orders WHERE amount < 0;

-- name: where_double_gt
SELECT id, discount FROM orders WHERE discount > 0.45;

-- name: where_negative_zero
SELECT id, discount, discount = 0 AS is_zero FROM orders WHERE discount <= 0;

-- name: where_in_list
SELECT id, status FROM orders WHERE status IN ('paid', 'shipped') AND customer_id < 30;

-- name: where_not_in_list
SELECT id, status FROM orders WHERE status NOT IN ('paid', 'new', 'shipped', 'cancelled', 'returned');

-- name: where_between_dates
SELECT id, day FROM orders WHERE day BETWEEN DATE '2024-03-01' AND DATE '2024-03-31';

-- name: where_between_timestamptz
SELECT id, created FROM orders
WHERE created BETWEEN TIMESTAMPTZ '2025-02-01 00:00:00+00' AND TIMESTAMPTZ '2025-02-10 12:00:00+00';

-- name: where_not_between
SELECT id, qty FROM orders WHERE qty NOT BETWEEN 1 AND 50;

-- name: where_like_prefix
SELECT id, status FROM orders WHERE status LIKE 'sh%';

-- name: where_ilike
SELECT id, status FROM orders WHERE status ILIKE 'p%';

-- name: where_like_escape
SELECT id, status FROM orders WHERE status LIKE '%\_%' ESCAPE '\' OR status LIKE '50\%%' ESCAPE '\';

-- name: where_like_unicode
SELECT id, name FROM customers WHERE name LIKE '%ö%' OR name LIKE '山%' OR name LIKE '%ï%';

-- name: where_not_like
SELECT count(*) AS n FROM customers WHERE name NOT LIKE '%a%';

-- name: where_is_null
SELECT id, customer_id FROM orders WHERE customer_id IS NULL;

-- name: where_is_not_null_and_null
SELECT id, tags, flag FROM orders WHERE tags IS NOT NULL AND flag IS NULL;

-- name: where_and_or_not
SELECT id, flag, qty, status, amount FROM orders
WHERE NOT (flag OR qty > 10) AND (status = 'new' OR amount < 0);

-- name: where_is_distinct_from
SELECT count(*) AS n FROM orders WHERE flag IS DISTINCT FROM true;

-- name: where_bool_column
SELECT id FROM orders WHERE flag AND qty = 7;

-- name: where_timestamp
SELECT id, ts FROM events WHERE ts >= TIMESTAMP '2024-06-01' AND ts < TIMESTAMP '2024-06-03';

-- name: where_time
SELECT id, t FROM events WHERE t < TIME '00:05:00';

-- name: where_small_ints
SELECT id, small, seq FROM events WHERE small < -120 AND seq > 0;

-- name: where_float_special
SELECT id, ratio FROM events WHERE ratio > 0.999 OR ratio < 0.001;

-- name: where_isnan_isinf
SELECT id, ratio, isnan(ratio) AS nan, isinf(ratio) AS inf FROM events WHERE isnan(ratio) OR isinf(ratio);

-- name: where_before_1970
SELECT id, created, day FROM orders WHERE created < TIMESTAMPTZ '1970-01-01 00:00:00+00';

-- name: where_empty_string
SELECT id, status FROM orders WHERE status = '';

-- name: where_regexp
SELECT id, name FROM customers WHERE regexp_matches(name, '^[A-Z][a-z]+$');

-- name: where_list_contains
SELECT id, tags FROM orders WHERE list_contains(tags, 'vip') AND customer_id < 100;

-- name: where_empty_list
SELECT id FROM orders WHERE len(tags) = 0;

-- name: where_struct_field
SELECT id, attrs FROM analytics.profiles WHERE attrs.k = 'lang';

-- name: where_blob_compare
SELECT id, payload FROM events WHERE payload > '\xF0'::BLOB;

-- name: where_or_across_types
SELECT id FROM events WHERE kind = 'refund' AND (value > 200 OR small = 0 OR t > TIME '23:59:00');

-- ============================================================ aggregates
-- name: agg_global
SELECT count(*), sum(amount), avg(amount), min(amount), max(amount), sum(qty), avg(discount),
       min(created), max(created), min(day), max(day)
FROM orders;

-- name: agg_group_status
SELECT status, count(*) AS n, count(DISTINCT customer_id) AS customers, sum(amount) AS total,
       avg(qty) AS avg_qty, min(discount) AS min_d, max(discount) AS max_d
FROM orders GROUP BY status;

-- name: agg_group_two_keys
SELECT status, flag, count(*) AS n, sum(qty) AS q FROM orders GROUP BY ALL;

-- name: agg_string_agg_ordered
SELECT customer_id, string_agg(status, ',' ORDER BY id) AS statuses
FROM orders WHERE customer_id <= 80 GROUP BY customer_id;

-- name: agg_string_agg_desc
SELECT region, string_agg(name, ' | ' ORDER BY name DESC NULLS LAST, id) AS names
FROM customers WHERE id < 120 GROUP BY region;

-- name: agg_bool_and_or
SELECT status, bool_and(flag) AS all_flags, bool_or(flag) AS any_flag, count_if(flag) AS n_flags
FROM orders GROUP BY status;

-- name: agg_list_ordered
SELECT customer_id, list(id ORDER BY id) AS ids FROM orders WHERE customer_id BETWEEN 100 AND 140 GROUP BY customer_id;

-- name: agg_having_count
SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id HAVING count(*) > 13;

-- name: agg_having_sum
SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id HAVING sum(amount) > 650000;

-- name: agg_having_without_select
SELECT status FROM orders GROUP BY status HAVING avg(discount) > 0.2;

-- name: agg_count_distinct
SELECT count(DISTINCT status) AS s, count(DISTINCT day) AS d, count(DISTINCT customer_id) AS c,
       count(DISTINCT tags) AS t
FROM orders;

-- name: agg_filter_clause
SELECT kind, count(*) FILTER (WHERE value > 0) AS pos, sum(value) FILTER (WHERE small < 0) AS neg_small
FROM events GROUP BY kind;

-- name: agg_stddev_var
SELECT kind, stddev_samp(value) AS sd, var_pop(value) AS vp, corr(value, seq) AS c
FROM events GROUP BY kind;

-- name: agg_median_quantile
SELECT kind, median(value) AS med, quantile_cont(value, 0.9) AS p90, quantile_disc(seq, 0.5) AS q50
FROM events GROUP BY kind;

-- name: agg_arg_max_min
SELECT customer_id, arg_max(id, amount) AS biggest, arg_min(id, created) AS first_order
FROM orders WHERE customer_id <= 60 GROUP BY customer_id;

-- name: agg_approx_count_distinct
SELECT approx_count_distinct(customer_id) AS a, approx_count_distinct(kind) AS k
FROM orders, (SELECT kind FROM events WHERE id < 10);

-- name: agg_sum_hugeint
SELECT sum(id) AS s, sum(seq) AS s2, sum(small) AS s3, sum(qty) AS s4 FROM events, (SELECT 1 AS qty);

-- name: agg_sum_decimals
SELECT region, sum(credit) AS credit, avg(score) AS score, sum(score) AS score_sum, max(credit) AS top
FROM customers GROUP BY region;

-- name: agg_min_max_strings
SELECT region, min(name) AS lo, max(name) AS hi FROM customers GROUP BY region;

-- name: agg_min_max_blob
SELECT kind, min(payload) AS lo, max(payload) AS hi FROM events GROUP BY kind;

-- name: agg_group_by_expression
SELECT date_trunc('month', created) AS m, count(*) AS n, sum(amount) AS s FROM orders GROUP BY m;

-- name: agg_rollup
SELECT status, flag, count(*) AS n, grouping(status, flag) AS g FROM orders GROUP BY ROLLUP (status, flag);

-- name: agg_cube
SELECT kind, small > 0 AS pos, count(*) AS n FROM events GROUP BY CUBE (kind, small > 0);

-- name: agg_grouping_sets
SELECT kind, order_id IS NULL AS no_order, count(*) AS n
FROM events GROUP BY GROUPING SETS ((kind), (order_id IS NULL), ());

-- name: agg_empty_input
SELECT count(*) AS n, sum(amount) AS s, max(status) AS m, bool_and(flag) AS b FROM orders WHERE id < 0;

-- name: agg_empty_group
-- empty
SELECT status, count(*) FROM orders WHERE id < 0 GROUP BY status;

-- name: agg_flatten_lists
SELECT customer_id, flatten(list(tags ORDER BY id)) AS all_tags FROM orders WHERE customer_id < 15 GROUP BY customer_id;

-- name: agg_bit_ops
SELECT kind, bit_or(small) AS o, bit_and(seq) AS a, bit_xor(id) AS x FROM events GROUP BY kind;

-- name: agg_histogram_map
SELECT status, histogram(qty % 5) AS h FROM orders GROUP BY status;

-- name: agg_sum_float
SELECT kind, sum(ratio) AS s, avg(ratio) AS a, count(ratio) AS n FROM events WHERE NOT isnan(ratio) AND NOT isinf(ratio) GROUP BY kind;

-- name: agg_float_with_special
SELECT kind, max(ratio) AS hi, min(ratio) AS lo FROM events GROUP BY kind;

-- name: agg_first_ordered
SELECT status, first(id ORDER BY amount DESC NULLS LAST, id) AS top, last(id ORDER BY id) AS last_id FROM orders GROUP BY status;

-- name: agg_distinct_sum_avg
SELECT sum(DISTINCT qty) AS s, avg(DISTINCT qty) AS a, count(DISTINCT qty) AS c FROM orders;

-- name: agg_group_by_list
SELECT tags, count(*) AS n FROM orders GROUP BY tags HAVING count(*) > 2;

-- name: agg_group_by_struct_map
SELECT attrs.k AS k, count(*) AS n, sum(attrs.n) AS s, count(prefs) AS with_prefs FROM analytics.profiles GROUP BY attrs.k;

-- ============================================================ order by, limit, distinct
-- name: order_nulls_first
-- ordered
SELECT id, customer_id FROM orders ORDER BY customer_id NULLS FIRST, id;

-- name: order_desc_nulls_last
-- ordered
SELECT id, discount FROM orders ORDER BY discount DESC NULLS LAST, id;

-- name: order_default_nulls
-- ordered
SELECT id, qty FROM orders ORDER BY qty, id;

-- name: order_desc_default_nulls
-- ordered
SELECT id, amount FROM orders ORDER BY amount DESC, id DESC;

-- name: order_expression_limit
-- ordered
SELECT id, amount FROM orders ORDER BY amount % 1000 DESC NULLS LAST, id LIMIT 50;

-- name: order_unicode_strings
-- ordered
SELECT id, name FROM customers ORDER BY name NULLS FIRST, id;

-- name: order_collate_nocase
-- ordered
SELECT id, name FROM customers ORDER BY name COLLATE NOCASE, id;

-- name: order_by_position
-- ordered
SELECT status, count(*) FROM orders GROUP BY status ORDER BY 2 DESC, 1 NULLS LAST;

-- name: limit_offset
-- ordered
SELECT id, status FROM orders ORDER BY id LIMIT 25 OFFSET 100;

-- name: limit_top_n
-- ordered
SELECT id, amount FROM orders ORDER BY amount DESC NULLS LAST, id LIMIT 10;

-- name: limit_percent
-- ordered
SELECT id FROM customers ORDER BY id LIMIT 2%;

-- name: limit_offset_past_end
-- empty
SELECT id FROM orders ORDER BY id LIMIT 10 OFFSET 100000;

-- name: order_timestamptz
-- ordered
SELECT id, created FROM orders ORDER BY created DESC NULLS FIRST, id LIMIT 40;

-- name: order_blob
-- ordered
SELECT id, payload FROM events ORDER BY payload, id LIMIT 40;

-- name: order_time_and_float
-- ordered
SELECT id, t, ratio FROM events ORDER BY ratio DESC, t, id LIMIT 30;

-- name: order_list_column
-- ordered
SELECT id, tags FROM orders WHERE id < 300 ORDER BY tags NULLS FIRST, id;

-- name: distinct_single
SELECT DISTINCT status FROM orders;

-- name: distinct_multi
SELECT DISTINCT customer_id, flag FROM orders;

-- name: distinct_on
-- ordered
SELECT DISTINCT ON (customer_id) customer_id, id, amount FROM orders ORDER BY customer_id, id;

-- name: distinct_lists
SELECT DISTINCT tags FROM orders;

-- name: distinct_expression
SELECT DISTINCT date_trunc('quarter', day) AS q, flag FROM orders;

-- ============================================================ joins
-- name: join_inner
SELECT o.id, o.amount, c.name, c.region FROM orders o JOIN customers c ON o.customer_id = c.id;

-- name: join_left
SELECT o.id, o.customer_id, c.name FROM orders o LEFT JOIN customers c ON c.id = o.customer_id WHERE c.id IS NULL;

-- name: join_right
SELECT c.id, c.name, o.id AS order_id FROM orders o RIGHT JOIN customers c ON o.customer_id = c.id WHERE o.id IS NULL OR o.id < 200;

-- name: join_full
SELECT c.id AS cid, o.id AS oid FROM customers c FULL OUTER JOIN orders o ON o.customer_id = c.id
WHERE c.id IS NULL OR o.id IS NULL;

-- name: join_cross
SELECT t.region, t."Quarter", s.status FROM "Region Targets" t CROSS JOIN (SELECT DISTINCT status FROM orders) s;

-- name: join_semi
SELECT * FROM customers c SEMI JOIN orders o ON o.customer_id = c.id AND o.amount > 90000;

-- name: join_anti
SELECT * FROM customers c ANTI JOIN orders o ON o.customer_id = c.id AND o.qty > 30;

-- name: join_self
SELECT o1.id, o2.id AS next_id, o1.customer_id FROM orders o1 JOIN orders o2
  ON o1.customer_id = o2.customer_id AND o1.id < o2.id AND o2.id - o1.id < 40;

-- name: join_self_events
SELECT e1.id, e1.kind, e2.value - e1.value AS delta FROM events e1 JOIN events e2 ON e2.id = e1.id + 1 AND e2.kind = e1.kind;

-- name: join_three_way
SELECT c.region, e.kind, count(*) AS n, sum(o.amount) AS amount, avg(e.value) AS v
FROM events e JOIN orders o ON e.order_id = o.id JOIN customers c ON o.customer_id = c.id
GROUP BY c.region, e.kind;

-- name: join_using_cross_db
SELECT customer_id, o.id, p.id AS pid FROM orders o JOIN analytics.profiles p USING (customer_id) WHERE o.id < 1500;

-- name: join_natural
SELECT * FROM (SELECT id AS oid, customer_id, status FROM orders WHERE id < 2000)
NATURAL JOIN (SELECT id AS pid, customer_id, "select" FROM analytics.profiles);

-- name: join_non_equi
SELECT e.id, o.id AS oid FROM events e JOIN orders o ON e.order_id = o.id AND e.ts > o.created::TIMESTAMP + INTERVAL 300 DAY;

-- name: join_band
SELECT c.id, o.id AS oid FROM customers c JOIN orders o ON o.customer_id = c.id AND o.day BETWEEN c.signup AND c.signup + 900;

-- name: join_asof
SELECT e.id, e.ts, o.id AS oid FROM (SELECT * FROM events WHERE ts IS NOT NULL) e
ASOF JOIN orders o ON e.order_id = o.customer_id AND e.ts >= o.created::TIMESTAMP
WHERE e.id < 3000;

-- name: join_asof_null_key
SELECT e.id, e.ts, o.id AS oid FROM events e ASOF JOIN orders o ON e.order_id = o.customer_id AND e.ts >= o.created::TIMESTAMP
WHERE e.id < 3000;

-- name: join_lateral_top2
SELECT c.id, x.id AS oid, x.amount FROM customers c,
  LATERAL (SELECT id, amount FROM orders o WHERE o.customer_id = c.id ORDER BY amount DESC NULLS LAST, id LIMIT 2) x;

-- name: join_null_keys_never_match
-- empty
SELECT o1.id FROM orders o1 JOIN orders o2 ON o1.customer_id = o2.customer_id WHERE o1.customer_id IS NULL;

-- name: join_not_distinct_matches_nulls
SELECT count(*) AS n FROM orders o1 JOIN orders o2 ON o1.customer_id IS NOT DISTINCT FROM o2.customer_id
WHERE o1.customer_id IS NULL;

-- name: join_unnest
SELECT o.id, t.tag FROM orders o, unnest(o.tags) AS t(tag);

-- name: join_left_extra_condition
SELECT o.id, c.region FROM orders o LEFT JOIN customers c ON c.id = o.customer_id AND c.region = 'EU' WHERE o.id < 1000;

-- name: join_events_to_orders_count
SELECT o.status, count(e.id) AS events, count(DISTINCT o.id) AS orders FROM orders o LEFT JOIN events e ON e.order_id = o.id GROUP BY o.status;

-- name: join_targets_on_region
SELECT c.region, t."Quarter", count(*) AS n, max(t.target) AS target
FROM customers c JOIN "Region Targets" t ON t.region = c.region GROUP BY ALL;

-- ============================================================ subqueries
-- name: sub_scalar_select_list
SELECT id, amount, (SELECT avg(amount) FROM orders) AS avg_all FROM orders WHERE id <= 100;

-- name: sub_scalar_where
SELECT id, amount FROM orders WHERE amount > (SELECT avg(amount) + 1.5 * stddev_pop(amount) FROM orders);

-- name: sub_correlated_count
SELECT c.id, (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) AS n FROM customers c;

-- name: sub_correlated_max
SELECT o.id, o.customer_id, o.amount FROM orders o
WHERE o.amount = (SELECT max(amount) FROM orders o2 WHERE o2.customer_id = o.customer_id);

-- name: sub_in
SELECT id, customer_id FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE region = 'EU');

-- name: sub_not_in_with_null
-- empty
SELECT id FROM orders WHERE customer_id NOT IN (SELECT customer_id FROM analytics.profiles);

-- name: sub_not_in_without_null
SELECT id FROM orders WHERE customer_id NOT IN (SELECT id FROM customers);

-- name: sub_exists
SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM events e WHERE e.order_id = o.id AND e.kind = 'refund');

-- name: sub_not_exists
SELECT c.id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.status = 'paid');

-- name: sub_all_any
SELECT id, amount FROM orders WHERE amount > ALL (SELECT target FROM "Region Targets" WHERE target IS NOT NULL)
UNION ALL
SELECT id, amount FROM orders WHERE qty = ANY (SELECT "Quarter" * 11 FROM "Region Targets");

-- name: sub_from
SELECT t.customer_id, t.s FROM (SELECT customer_id, sum(amount) AS s FROM orders GROUP BY customer_id) t WHERE t.s > 600000;

-- name: sub_exists_select_list
SELECT c.id, EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) AS has_orders FROM customers c;

-- name: sub_nested
SELECT id FROM events WHERE order_id IN (
  SELECT id FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE name LIKE 'A%'));

-- name: sub_correlated_having
SELECT customer_id, count(*) AS n FROM orders o GROUP BY customer_id
HAVING count(*) > (SELECT count(*) / 600 FROM orders) + 8;

-- name: sub_correlated_in_case
SELECT c.id, CASE WHEN (SELECT max(o.amount) FROM orders o WHERE o.customer_id = c.id) > 90000 THEN 'big' ELSE 'small' END AS k
FROM customers c;

-- ============================================================ CTEs
-- name: cte_simple
WITH big AS (SELECT * FROM orders WHERE amount > 95000) SELECT customer_id, count(*) AS n FROM big GROUP BY customer_id;

-- name: cte_multiple
WITH per_customer AS (SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id),
     eu AS (SELECT id, name FROM customers WHERE region = 'EU')
SELECT eu.id, eu.name, p.total FROM eu JOIN per_customer p ON p.customer_id = eu.id;

-- name: cte_self_join
WITH m AS (SELECT customer_id, date_trunc('month', day) AS month, count(*) AS n FROM orders GROUP BY ALL)
SELECT a.customer_id, a.month, a.n, b.n AS prev FROM m a JOIN m b ON a.customer_id = b.customer_id AND b.month = a.month - INTERVAL 1 MONTH;

-- name: cte_recursive_series
-- ordered
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 55)
SELECT n, (SELECT count(*) FROM orders WHERE qty = n) AS orders FROM r ORDER BY n;

-- name: cte_recursive_walk
WITH RECURSIVE walk(id, steps, path) AS (
  SELECT id, 0, [id] FROM events WHERE id = 1
  UNION ALL
  SELECT e.id, w.steps + 1, list_append(w.path, e.id) FROM walk w JOIN events e ON e.id = w.id + 1 + (abs(e.small::INTEGER) % 7)
  WHERE w.steps < 200)
SELECT * FROM walk;

-- name: cte_recursive_tree
WITH RECURSIVE chain(cid, depth) AS (
  SELECT id, 0 FROM customers WHERE id <= 5
  UNION ALL
  SELECT c.id, ch.depth + 1 FROM chain ch JOIN customers c ON c.id = ch.cid * 2 + 1 WHERE ch.depth < 10)
SELECT cid, depth FROM chain;

-- name: cte_materialized
WITH x AS MATERIALIZED (SELECT kind, avg(value) AS v FROM events GROUP BY kind)
SELECT a.kind, a.v, b.kind AS other FROM x a, x b WHERE a.v > b.v;

-- name: cte_shadows_table
WITH orders AS (SELECT * FROM orders WHERE id < 10) SELECT count(*) AS n, sum(amount) AS s FROM orders;

-- name: cte_and_qualified_table
WITH orders AS (SELECT 1 AS x) SELECT count(*) AS n, (SELECT sum(x) FROM orders) AS s FROM "default".orders;

-- ============================================================ windows
-- name: win_row_number
SELECT id, customer_id, row_number() OVER (PARTITION BY customer_id ORDER BY id) AS rn FROM orders;

-- name: win_rank_dense_rank
SELECT id, status, qty, rank() OVER (PARTITION BY status ORDER BY qty) AS r,
       dense_rank() OVER (PARTITION BY status ORDER BY qty) AS dr
FROM orders;

-- name: win_lag_lead
SELECT id, customer_id, amount, lag(amount) OVER w AS prev, lead(amount, 2, 0) OVER w AS next2
FROM orders WINDOW w AS (PARTITION BY customer_id ORDER BY id);

-- name: win_running_sum
SELECT id, customer_id, sum(amount) OVER (PARTITION BY customer_id ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running
FROM orders;

-- name: win_moving_avg
SELECT id, avg(value) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING) AS mavg FROM events;

-- name: win_range_frame_interval
SELECT id, day, sum(qty) OVER (ORDER BY day RANGE BETWEEN INTERVAL 7 DAYS PRECEDING AND CURRENT ROW) AS week_qty
FROM orders WHERE day IS NOT NULL;

-- name: win_groups_frame
SELECT id, qty, count(*) OVER (ORDER BY qty GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS n FROM orders;

-- name: win_ntile_percent_rank
SELECT id, ntile(4) OVER (ORDER BY amount, id) AS quartile, percent_rank() OVER (ORDER BY amount) AS pr,
       cume_dist() OVER (ORDER BY amount) AS cd
FROM orders;

-- name: win_first_last_nth
SELECT id, kind, first_value(id) OVER w AS f, last_value(id) OVER w AS l, nth_value(id, 3) OVER w AS third
FROM events WINDOW w AS (PARTITION BY kind ORDER BY ts, id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING);

-- name: win_qualify
SELECT id, customer_id, amount FROM orders
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY amount DESC NULLS LAST, id) = 1;

-- name: win_partition_only
SELECT id, status, count(*) OVER (PARTITION BY status) AS n, sum(discount) OVER (PARTITION BY status) AS d FROM orders;

-- name: win_over_empty
SELECT id, count(*) OVER () AS n, max(amount) OVER () AS top FROM orders WHERE customer_id = 7;

-- name: win_filter
SELECT id, status, count(*) FILTER (WHERE flag) OVER (PARTITION BY status) AS flagged FROM orders;

-- name: win_exclude_current
SELECT id, sum(qty) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW) AS around FROM orders;

-- name: win_over_aggregate
SELECT kind, count(*) AS n, sum(count(*)) OVER () AS total, rank() OVER (ORDER BY count(*) DESC, kind) AS r
FROM events GROUP BY kind;

-- ============================================================ set operations
-- name: set_union
SELECT customer_id AS id FROM orders UNION SELECT id FROM customers;

-- name: set_union_all
SELECT status AS s FROM orders WHERE qty > 50 UNION ALL SELECT kind FROM events WHERE value > 280;

-- name: set_intersect
SELECT customer_id FROM orders WHERE flag INTERSECT SELECT customer_id FROM analytics.profiles;

-- name: set_except
SELECT id FROM customers EXCEPT SELECT customer_id FROM orders WHERE qty > 25;

-- name: set_intersect_all
SELECT qty FROM orders WHERE status = 'paid' INTERSECT ALL SELECT qty FROM orders WHERE status = 'new';

-- name: set_except_all
SELECT qty FROM orders WHERE status = 'paid' EXCEPT ALL SELECT qty FROM orders WHERE status = 'new';

-- name: set_union_by_name
SELECT id, status FROM orders WHERE id < 5 UNION ALL BY NAME SELECT kind AS status, id FROM events WHERE id < 5;

-- name: set_ordered_limits
-- ordered
(SELECT id, 'lo' AS k FROM orders ORDER BY id LIMIT 5)
UNION ALL
(SELECT id, 'hi' AS k FROM orders ORDER BY id DESC LIMIT 5)
ORDER BY id;

-- ============================================================ expressions, CASE, casts
-- name: case_searched
SELECT CASE WHEN amount IS NULL THEN 'none' WHEN amount < 0 THEN 'refund' WHEN amount < 1000 THEN 'small'
            ELSE 'large' END AS bucket, count(*) AS n
FROM orders GROUP BY 1;

-- name: case_simple
SELECT id, CASE status WHEN 'paid' THEN 1 WHEN 'shipped' THEN 2 ELSE 0 END AS code FROM orders;

-- name: coalesce_nullif_ifnull
SELECT id, coalesce(customer_id, -1) AS c, nullif(qty, 0) AS q, ifnull(status, '?') AS s FROM orders;

-- name: cast_various
SELECT id, CAST(amount AS DOUBLE) AS a_d, amount::VARCHAR AS a_s, qty::DOUBLE / 3 AS q3, CAST(id AS VARCHAR) AS i_s,
       CAST(day AS TIMESTAMP) AS d_ts, created::DATE AS c_d, CAST(discount AS DECIMAL(10,4)) AS d_dec,
       TRY_CAST(status AS INTEGER) AS bad, flag::INTEGER AS f
FROM orders;

-- name: decimal_arithmetic
SELECT id, amount * qty AS line, amount / 3 AS third, amount + 0.005 AS plus, round(amount, 0) AS r,
       amount::DECIMAL(18,4) AS wide, -amount AS neg, amount % 7 AS m
FROM orders;

-- name: decimal_wide_arithmetic
SELECT id, credit, credit * 2 AS dbl, credit + score AS mixed, credit::DOUBLE AS d, round(credit, 2) AS r, floor(score) AS f
FROM customers;

-- name: integer_arithmetic
SELECT id, qty // 7 AS div, qty % 7 AS mod, -qty AS neg, abs(qty) AS a, qty * 2147483647::BIGINT AS big,
       small::INTEGER * seq AS prod, seq // 256 AS hi
FROM orders, (SELECT small, seq FROM events WHERE id = 5);

-- name: double_math
SELECT id, sqrt(abs(value)) AS s, ln(abs(value) + 1) AS l, exp(value / 100) AS e, round(value, 3) AS r,
       floor(value) AS f, ceil(value) AS c, power(value, 2) AS p, sign(value) AS sg
FROM events;

-- name: greatest_least
SELECT id, greatest(qty, 10) AS g, least(amount, 100.00) AS l, greatest(status, 'm') AS gs FROM orders;

-- name: boolean_logic
SELECT id, flag AND qty > 10 AS a, flag OR NULL AS b, NOT flag AS c, flag IS TRUE AS d, flag IS NOT FALSE AS e,
       flag <> (qty > 20) AS x
FROM orders;

-- name: blob_functions
SELECT id, hex(payload) AS h, to_base64(payload) AS b64, md5(payload) AS m, payload || '\x00'::BLOB AS cat FROM events;

-- name: hash_functions
SELECT id, hash(id) AS h, md5(name) AS m, sha256(coalesce(name, '')) AS s FROM customers;

-- name: interval_arithmetic
SELECT id, created + INTERVAL 1 DAY AS next_day, day - DATE '2024-01-01' AS days, age(created, TIMESTAMPTZ '2020-01-01 00:00:00+00') AS age,
       created - TIMESTAMPTZ '2024-01-01 00:00:00+00' AS since
FROM orders;

-- name: interval_result
SELECT kind, max(ts) - min(ts) AS span, to_seconds(min(small)) AS secs FROM events GROUP BY kind;

-- name: null_literal_column
SELECT NULL AS n, id FROM orders WHERE id < 20;

-- name: uuid_result
SELECT id, ('00000000-0000-4000-8000-' || lpad(id::VARCHAR, 12, '0'))::UUID AS u FROM orders WHERE id < 50;

-- name: struct_result
SELECT id, struct_pack(a := id, b := status, c := tags) AS s, {'x': qty, 'y': flag} AS lit FROM orders;

-- name: map_result
SELECT id, MAP {'id': id, 'qty': qty} AS m, map_from_entries([('k', status)]) AS m2 FROM orders;

-- name: array_fixed_result
SELECT id, [id, qty, 0]::BIGINT[3] AS a FROM orders WHERE id < 100;

-- name: json_result
SELECT id, to_json(tags) AS j, json_array_length(to_json(tags)) AS n FROM orders WHERE id < 300;

-- name: time_result
SELECT id, t, t + INTERVAL 90 MINUTE AS later, make_time(1, 2, 3.5) AS mt FROM events;

-- name: hugeint_result
SELECT sum(id) * 1000000000000 AS big, sum(id)::HUGEINT * -3 AS neg FROM orders;

-- name: unsigned_result
SELECT id, id::UTINYINT AS u8, (id * 300)::USMALLINT AS u16, (id * 70000)::UINTEGER AS u32, (id * 1e12)::UBIGINT AS u64
FROM orders WHERE id < 200;

-- ============================================================ date and time
-- name: dt_date_trunc
SELECT id, date_trunc('month', created) AS m, date_trunc('week', day) AS w, date_trunc('year', day) AS y FROM orders;

-- name: dt_date_trunc_timestamp
SELECT id, date_trunc('hour', ts) AS h, date_trunc('minute', ts) AS mi, date_trunc('day', ts) AS d FROM events;

-- name: dt_extract
SELECT id, extract(year FROM created) AS y, extract(dow FROM day) AS dow, extract(epoch FROM created) AS ep,
       year(day) AS y2, quarter(day) AS q, month(created) AS m, dayofyear(day) AS doy
FROM orders;

-- name: dt_extract_timestamp_time
SELECT id, extract(hour FROM t) AS h, extract(microsecond FROM ts) AS us, epoch_ms(ts) AS ms, extract(isodow FROM ts) AS d
FROM events;

-- name: dt_strftime
SELECT id, strftime(created, '%Y-%m-%d %H:%M:%S.%f') AS c, strftime(day, '%A %d %B %Y') AS d FROM orders;

-- name: dt_strptime
SELECT id, strptime(strftime(ts, '%d/%m/%Y %H:%M'), '%d/%m/%Y %H:%M') AS parsed FROM events;

-- name: dt_date_diff
SELECT o.id, date_diff('day', c.signup, o.day) AS days, date_diff('month', c.signup, o.day) AS months,
       datediff('hour', c.signup::TIMESTAMP, o.created::TIMESTAMP) AS hours
FROM orders o JOIN customers c ON c.id = o.customer_id;

-- name: dt_dayname_group
SELECT dayname(day) AS dn, monthname(day) AS mn, count(*) AS n FROM orders GROUP BY ALL;

-- name: dt_time_bucket
SELECT time_bucket(INTERVAL '6 hours', ts) AS b, count(*) AS n, sum(value) AS v FROM events GROUP BY b;

-- name: dt_generate_series_join
-- ordered
SELECT d::DATE AS d, count(o.id) AS n
FROM generate_series(DATE '2024-01-01', DATE '2024-02-15', INTERVAL 1 DAY) g(d)
LEFT JOIN orders o ON o.day = d::DATE GROUP BY d ORDER BY d;

-- name: dt_pre_1970
SELECT id, extract(year FROM created) AS y, date_trunc('day', created) AS d, strftime(created, '%Y-%m-%d %H:%M:%S.%f') AS s,
       epoch_us(created) AS us
FROM orders WHERE created < TIMESTAMPTZ '1970-01-02 00:00:00+00';

-- name: dt_last_day_make_date
SELECT id, last_day(day) AS ld, make_date(year(day), 1, 1) AS jan1, make_timestamp(2024, 1, 2, 3, 4, 5.5) AS mt FROM orders;

-- name: dt_at_time_zone
SELECT id, created AT TIME ZONE 'America/New_York' AS ny, timezone('Asia/Tokyo', created) AS tokyo FROM orders;

-- name: dt_timestamptz_to_varchar
SELECT id, created::VARCHAR AS s, day::VARCHAR AS d FROM orders;

-- ============================================================ strings
-- name: str_case_length
SELECT id, upper(name) AS u, lower(name) AS l, length(name) AS len, strlen(name) AS bytes, reverse(name) AS r FROM customers;

-- name: str_concat
SELECT id, name || ' (' || coalesce(region, '?') || ')' AS label, concat_ws('-', region, name, signup) AS cw,
       concat(name, id) AS c
FROM customers;

-- name: str_substr
SELECT id, substr(name, 2, 3) AS s, left(name, 2) AS l, right(name, 3) AS r, name[1:4] AS sl FROM customers;

-- name: str_replace_trim_pad
SELECT id, replace(status, 'e', 'E') AS r, trim('  ' || status || ' ') AS t, ltrim(status, 'n') AS lt,
       lpad(id::VARCHAR, 6, '0') AS lp, rpad(coalesce(status, ''), 10, '.') AS rp
FROM orders;

-- name: str_split
SELECT id, string_split(name, ' ') AS parts, split_part(name, ' ', 1) AS first, len(string_split(name, ' ')) AS n FROM customers;

-- name: str_regexp
SELECT id, regexp_extract(name, '([0-9]+)', 1) AS num, regexp_replace(name, '[aeiou]', '*', 'g') AS masked,
       regexp_full_match(coalesce(name, ''), '.*[0-9]') AS has_digit
FROM customers;

-- name: str_position
SELECT id, position('a' IN name) AS p, instr(name, 'e') AS i, starts_with(name, 'A') AS s, contains(name, 'an') AS c,
       ends_with(name, '1') AS e
FROM customers;

-- name: str_repeat_format
SELECT id, repeat('ab', qty % 4) AS r, format('{}:{}', id, status) AS f, printf('%05d|%s', id, status) AS p FROM orders;

-- name: str_unicode
SELECT id, nfc_normalize(name) AS n, strip_accents(name) AS s, unicode(name) AS u, ascii(name) AS a FROM customers;

-- name: str_similarity
SELECT id, levenshtein(coalesce(name, ''), 'Alice') AS lev, jaccard(coalesce(nullif(name, ''), 'x'), 'Alice') AS j FROM customers;

-- name: str_group_unicode
SELECT name, count(*) AS n FROM customers GROUP BY name;

-- name: str_compare_unicode
SELECT a.id, b.id AS bid FROM customers a JOIN customers b ON a.name < b.name AND a.id + 1 = b.id;

-- ============================================================ lists, structs, maps
-- name: list_len_index
SELECT id, len(tags) AS n, array_length(tags) AS al, tags[1] AS first, tags[-1] AS last, list_extract(tags, 2) AS second FROM orders;

-- name: list_contains_any_all
SELECT id, list_contains(tags, 'vip') AS vip, list_has_any(tags, ['gift', 'sale']) AS any2,
       list_has_all(tags, ['gift', 'sale']) AS all2
FROM orders;

-- name: list_sort_distinct
SELECT id, list_sort(tags) AS s, list_sort(list_distinct(tags)) AS d, list_reverse_sort(tags) AS r FROM orders;

-- name: list_transform_filter
SELECT id, list_transform(tags, x -> upper(x)) AS up, list_filter(tags, x -> length(x) > 3) AS long FROM orders;

-- name: list_unnest_select
SELECT id, unnest(tags) AS tag FROM orders WHERE id < 2000;

-- name: list_aggregate_functions
SELECT id, list_aggregate(scores, 'sum') AS s, list_max(scores) AS mx, list_min(scores) AS mn, list_avg(scores) AS av
FROM analytics.profiles;

-- name: list_slice
SELECT id, tags[1:2] AS a, list_slice(tags, 2, 3) AS b, tags[:-1] AS c FROM orders;

-- name: list_concat_append
SELECT id, list_concat(tags, ['x']) AS c, list_append(tags, NULL) AS a, list_prepend('first', tags) AS p FROM orders;

-- name: list_to_string_position
SELECT id, array_to_string(tags, '|') AS s, list_position(tags, 'gift') AS p, list_count(tags) AS c FROM orders;

-- name: list_nested_matrix
SELECT id, matrix, flatten(matrix) AS flat, len(matrix) AS rows, matrix[1][1] AS first FROM analytics.profiles;

-- name: list_constructors
SELECT id, [id, qty] AS pair, list_value(status, 'x') AS lv, [] AS empty FROM orders WHERE id < 500;

-- name: list_comprehension
SELECT id, [x || '!' FOR x IN tags IF x IS NOT NULL] AS bang FROM orders;

-- name: list_unnest_group
SELECT tag, count(*) AS n, count(DISTINCT customer_id) AS c FROM (SELECT unnest(tags) AS tag, customer_id FROM orders) GROUP BY tag;

-- name: list_doubles_stored
SELECT id, scores, list_sort(scores) AS sorted FROM analytics.profiles;

-- name: map_functions
SELECT id, map_keys(prefs) AS k, map_values(prefs) AS v, cardinality(prefs) AS n, prefs['lang'] AS lang,
       map_contains(prefs, 'tz') AS has_tz
FROM analytics.profiles;

-- name: map_entries
SELECT id, map_entries(prefs) AS e FROM analytics.profiles;

-- name: struct_functions
SELECT id, attrs.k AS k, attrs['n'] AS n, struct_extract(attrs, 'n') + 1 AS n1, attrs IS NULL AS isnull,
       struct_insert(attrs, z := id) AS ins
FROM analytics.profiles;

-- ============================================================ names
-- name: names_qualified_default
SELECT count(*) AS n FROM "default".orders;

-- name: names_qualified_join_across_databases
SELECT p.id, c.name FROM analytics.profiles p JOIN "default".customers c ON c.id = p.customer_id;

-- name: names_quoted_table
SELECT "Quarter", sum(target) AS total, count(*) AS n FROM "Region Targets" GROUP BY "Quarter";

-- name: names_quoted_table_other_case
SELECT count(*) AS n FROM "region targets";

-- name: names_quoted_columns
SELECT "Mixed Case", "select" FROM analytics.profiles WHERE "select" > 50;

-- name: names_quoted_column_other_case
SELECT "mixed case" AS mc, "SELECT" AS s FROM analytics.profiles WHERE id < 40;

-- name: names_alias_qualified_columns
SELECT p."Mixed Case", p.attrs.k FROM analytics.profiles AS p WHERE p.id < 100;

-- name: names_table_qualified_column
SELECT profiles.id, profiles."select" FROM analytics.profiles WHERE profiles.id < 30;

-- name: names_schema_qualified_column
SELECT analytics.profiles.id FROM analytics.profiles WHERE analytics.profiles.id < 30;

-- name: names_default_qualified_column
SELECT "default".orders.id, orders.status FROM "default".orders WHERE "default".orders.id < 30;

-- name: names_bare_table_qualified_column
SELECT orders.id, orders.status FROM orders WHERE orders.id < 30;

-- name: names_self_join_bare_and_qualified
SELECT count(*) AS n FROM orders a JOIN "default".orders b ON a.id = b.id;

-- name: names_dotted_string_literal
SELECT 'analytics.profiles' AS s, count(*) AS n FROM orders;

-- name: names_dotted_comment
SELECT count(*) AS n /* analytics.profiles */ FROM orders;

-- name: names_subquery_alias_like_database
SELECT analytics.x FROM (SELECT id AS x FROM orders WHERE id < 5) analytics;

-- name: names_qualified_with_spaces_and_comment
SELECT count(*) AS n FROM analytics . "profiles" p JOIN "default" /* the default database */ . orders o ON o.customer_id = p.customer_id;

-- name: names_qualified_after_multibyte_text
SELECT 'ünïcödé 山田 😀' AS s, count(*) AS n FROM analytics.profiles WHERE "Mixed Case" <> '日本';

-- name: names_qualified_twice_with_aliases
SELECT a.id, b.id AS bid FROM analytics.profiles a JOIN analytics.profiles b ON a.customer_id = b.customer_id AND a.id < b.id;

-- name: names_qualified_quoted_mixed_case_table
SELECT "Quarter", count(*) AS n FROM "default"."Region Targets" GROUP BY ALL;

-- name: names_qualified_in_subquery_and_cte
WITH p AS (SELECT customer_id FROM analytics.profiles WHERE "select" > 10)
SELECT count(*) AS n FROM orders WHERE customer_id IN (SELECT customer_id FROM p)
  AND EXISTS (SELECT 1 FROM "default".customers c WHERE c.id = orders.customer_id);

-- name: names_pivot_qualified
PIVOT analytics.profiles ON "select" IN (10, 20, 30) USING count(*) GROUP BY customer_id;

-- name: names_pivot_dynamic
-- error
PIVOT orders ON status USING count(*) GROUP BY flag;

-- name: names_same_table_name_two_databases
SELECT (SELECT count(*) FROM customers) AS d, (SELECT sum(id) FROM analytics.customers) AS a,
       (SELECT sum(id) FROM "default".customers) AS d2;

-- name: names_same_table_name_joined
SELECT c.id, c.name, a.name AS other FROM customers c JOIN analytics.customers a ON a.id = c.id;

-- name: names_same_table_name_unaliased
SELECT count(*) AS n FROM customers, analytics.customers;

-- name: names_query_table
SELECT count(*) AS n FROM query_table('orders');

-- name: names_query_table_with_dot
SELECT count(*) AS n, 1.5 AS x FROM query_table('orders');

-- name: names_case_insensitive_table
SELECT count(*) AS n FROM ORDERS o JOIN Customers c ON c.id = o.customer_id;

-- ============================================================ parameters
-- name: param_question_mark
-- args: 42
SELECT id, amount FROM orders WHERE customer_id = ?;

-- name: param_dollar
-- args: 'paid', 20
SELECT id, qty FROM orders WHERE status = $1 AND qty > $2;

-- name: param_dollar_reused
-- args: 10
SELECT id, qty FROM orders WHERE qty BETWEEN $1 AND $1 + 5 AND customer_id < $1 * 10;

-- name: param_timestamp
-- args: ts'2025-12-01T00:00:00Z'
SELECT id, created FROM orders WHERE created >= ?;

-- name: param_double_and_like
-- args: 0.3, 'p%'
SELECT id FROM orders WHERE discount > ? AND status LIKE ?;

-- name: param_null
-- args: NULL
SELECT count(*) AS n FROM orders WHERE customer_id IS NOT DISTINCT FROM ?;

-- name: param_in_select_list
-- args: 'x', 7
SELECT ? AS p, id + ? AS q FROM orders WHERE id < 10;

-- name: param_limit
-- ordered
-- args: 7
SELECT id FROM orders ORDER BY id LIMIT ?;

-- name: param_in_subquery
-- args: 'refund'
SELECT id FROM orders WHERE id IN (SELECT order_id FROM events WHERE kind = $1);

-- name: param_bool
-- args: true, 3
SELECT id FROM orders WHERE flag = ? AND qty = ?;

-- name: param_decimal_compare
-- args: 99000.5
SELECT id, amount FROM orders WHERE amount > ?;

-- name: param_date_string
-- args: '2024-05-05'
SELECT id, day FROM orders WHERE day = ?::DATE;

-- name: param_in_join_and_having
-- args: 'EU', 5
SELECT c.id, count(*) AS n FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.region = $1 GROUP BY c.id HAVING count(*) > $2;

-- ============================================================ other forms
-- name: misc_values_join
SELECT v.x, v.y, o.status FROM (VALUES (1, 'a'), (2, 'b'), (4000, 'c')) v(x, y) JOIN orders o ON o.id = v.x;

-- name: misc_range_join
SELECT r.range AS q, count(o.id) AS n FROM range(0, 60, 5) r LEFT JOIN orders o ON o.qty = r.range GROUP BY r.range;

-- name: misc_exclude_replace
SELECT * EXCLUDE (tags, flag) REPLACE (amount * 2 AS amount) FROM orders WHERE id < 100;

-- name: misc_columns_regex
SELECT COLUMNS('^c.*') FROM orders WHERE id < 50;

-- name: misc_columns_aggregate
SELECT min(COLUMNS(* EXCLUDE (payload))), max(COLUMNS(['small', 'seq'])) FROM events;

-- name: misc_pivot_in
PIVOT orders ON status IN ('new', 'paid', 'shipped') USING count(*) GROUP BY flag;

-- name: misc_unpivot
UNPIVOT (SELECT id, qty, customer_id FROM orders WHERE id < 20) ON qty, customer_id INTO NAME k VALUE v;

-- name: misc_timezone_setting
SELECT current_setting('TimeZone') AS tz;

-- name: misc_select_without_table
SELECT 1 + 1 AS two, 'x' AS s, DATE '2024-02-29' + 1 AS d;

-- name: misc_from_first
FROM orders SELECT id, status WHERE id < 20;

-- name: misc_table_keyword
SELECT count(*) AS n FROM (TABLE "Region Targets");

-- name: misc_order_by_all
-- ordered
SELECT kind, small FROM events WHERE id < 50 ORDER BY ALL;

-- name: misc_group_by_all_count_star
SELECT region, count(*) AS n, count(name) AS named FROM customers GROUP BY ALL;

-- name: misc_union_with_tables_of_all_databases
SELECT 'orders' AS t, count(*) AS n FROM orders
UNION ALL SELECT 'customers', count(*) FROM customers
UNION ALL SELECT 'events', count(*) FROM events
UNION ALL SELECT 'profiles', count(*) FROM analytics.profiles
UNION ALL SELECT 'targets', count(*) FROM "Region Targets";

-- name: misc_many_scans_of_one_table
SELECT k, count(*) AS n, sum(v) AS s FROM (
  SELECT 1 AS k, qty AS v FROM orders WHERE qty < 5 UNION ALL
  SELECT 2, qty FROM orders WHERE qty BETWEEN 5 AND 10 UNION ALL
  SELECT 3, qty FROM orders WHERE qty > 40 UNION ALL
  SELECT 4, small FROM events WHERE small > 100 UNION ALL
  SELECT 5, seq % 100 FROM events WHERE seq < -30000 UNION ALL
  SELECT 6, id FROM customers WHERE region = 'US' UNION ALL
  SELECT 7, "select" FROM analytics.profiles UNION ALL
  SELECT 8, qty FROM orders o WHERE EXISTS (SELECT 1 FROM orders o2 WHERE o2.id = o.id + 1 AND o2.qty = o.qty)
) GROUP BY k;

-- name: misc_large_in_list
SELECT id FROM events WHERE id IN (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584, 4181, 6765, 10946, 17711);

-- ============================================================ table shapes
-- name: shape_empty_table_scan
-- empty
SELECT * FROM empty_table;

-- name: shape_empty_table_aggregate
SELECT count(*) AS n, sum(d) AS s, max(v) AS m FROM empty_table;

-- name: shape_empty_table_join
SELECT o.id, e.v FROM orders o LEFT JOIN empty_table e ON e.id = o.id WHERE o.id < 20;

-- name: shape_sparse_buckets
SELECT * FROM sparse;

-- name: shape_sparse_join
SELECT s.id, s.v, o.status FROM sparse s LEFT JOIN orders o ON o.id = s.id;

-- name: shape_added_column
SELECT * FROM evolving;

-- name: shape_added_column_filter
SELECT id, a FROM evolving WHERE b IS NULL;

-- name: shape_added_column_aggregate
SELECT a, count(b) AS with_b, sum(b) AS s, min(id) FILTER (WHERE b IS NOT NULL) AS first_b FROM evolving GROUP BY a;

-- name: shape_boundary_strings
SELECT id, status, length(status) AS len FROM orders WHERE status IN ('twelve-bytes', 'thirteen-byte', '');

-- ============================================================ predicates a scan could prune on
-- Today the engine pushes no filter into the scan; these pin the results
-- for when it prunes batches by min/max statistics (issue 3, item 1).
-- name: prune_point_lookup
SELECT * FROM events WHERE id = 1;

-- name: prune_in_extremes
SELECT id FROM events WHERE id IN (1, 20000, 20001);

-- name: prune_nan_equality
SELECT id, ratio FROM events WHERE ratio = 'NaN'::FLOAT;

-- name: prune_nan_greater
SELECT count(*) AS n FROM events WHERE ratio > 1;

-- name: prune_negative_zero
SELECT id, discount FROM orders WHERE discount = 0;

-- name: prune_beyond_ascii
SELECT id, name FROM customers WHERE name > 'z';

-- name: prune_decimal_negative_bound
SELECT id, amount FROM orders WHERE amount <= -400.00;

-- name: prune_wide_decimal
SELECT id, credit FROM customers WHERE credit < -900000000000000000;

-- name: prune_timestamp_before_epoch
SELECT count(*) AS n FROM orders WHERE created <= TIMESTAMPTZ '1969-12-31 23:59:59.5+00';

-- name: prune_is_null_only
SELECT id FROM orders WHERE created IS NULL;

-- name: prune_empty_blob
SELECT id FROM events WHERE payload = ''::BLOB;

-- name: prune_tinyint_extremes
SELECT id, small FROM events WHERE small = -128 OR small = 127;

-- name: prune_smallint_extremes
SELECT id, seq FROM events WHERE seq <= -32760 OR seq >= 32760;

-- name: prune_time_range
SELECT count(*) AS n FROM events WHERE t BETWEEN TIME '12:00:00' AND TIME '12:10:00';

-- name: prune_date_equal
SELECT id FROM orders WHERE day = DATE '2025-03-15';

-- name: prune_bool_false
SELECT count(*) AS n FROM orders WHERE flag = false;

-- name: prune_on_added_column
SELECT id, b FROM evolving WHERE b > 200;

-- name: prune_parameter
-- args: 20000
SELECT id, kind FROM events WHERE id >= ?;

-- Adversarial cases for the pushdown rules (planner/duck/filters.go) and
-- constant conversions (filtervalues.go): aliases that hide or borrow
-- table names, outer joins, collations, mixed-type comparisons.
-- name: prune_alias_hides_table_outer_ref
SELECT orders.id FROM orders WHERE orders.id < 100 AND EXISTS (SELECT 1 FROM orders o2 WHERE o2.id = orders.id + 3000 AND orders.id < 100);

-- name: prune_alias_named_like_other_table
SELECT count(*) AS n FROM orders o JOIN analytics.profiles AS orders ON orders.customer_id = o.customer_id WHERE orders.id < 10;

-- name: prune_alias_named_like_other_table_2
SELECT count(*) AS n FROM orders o JOIN analytics.profiles AS orders ON orders.customer_id = o.customer_id WHERE orders.customer_id < 10;

-- name: prune_table_aliased_as_other_table
SELECT count(*) AS n FROM orders AS customers JOIN customers AS c ON c.id = customers.customer_id WHERE customers.id < 50;

-- name: prune_outer_alias_in_subquery
SELECT count(*) FROM orders o WHERE o.id < 50 AND EXISTS (SELECT 1 FROM orders WHERE orders.id = o.id + 4000 AND o.id < 50);

-- name: prune_int_vs_decimal_gt
SELECT count(*) FROM orders WHERE qty > 2.5;

-- name: prune_int_vs_decimal_ge
SELECT count(*) FROM orders WHERE qty >= 2.5;

-- name: prune_date_vs_timestamp
SELECT count(*) FROM orders WHERE day > TIMESTAMP '2024-05-05 12:00:00';

-- name: prune_timestamp_vs_date
SELECT count(*) FROM events WHERE ts >= DATE '2024-06-01';

-- name: prune_timestamptz_vs_timestamp
SELECT count(*) FROM orders WHERE created >= TIMESTAMP '2025-01-01 00:00:00';

-- name: prune_timestamptz_vs_string
SELECT count(*) FROM orders WHERE created > '2025-01-01';

-- name: prune_collate_nocase_column
SELECT count(*) FROM customers WHERE name COLLATE NOCASE = 'alice';

-- name: prune_float_vs_double
SELECT count(*) FROM events WHERE ratio <= 0.5;

-- name: prune_float_vs_float
SELECT count(*) FROM events WHERE ratio > 0.5::FLOAT;

-- name: prune_tinyint_out_of_range_constants
SELECT count(*) FROM events WHERE small < 200 AND small > -129;

-- name: prune_decimal_vs_double
SELECT count(*) FROM orders WHERE amount > 100.5::DOUBLE;

-- name: prune_decimal_vs_finer_decimal
SELECT count(*) FROM orders WHERE amount = 1234.5;

-- name: prune_bigint_vs_huge_double
SELECT count(*) FROM orders WHERE id < 1e20;

-- name: prune_constant_first
SELECT count(*) FROM orders WHERE 5 < qty;

-- name: prune_greater_than_nan
SELECT count(*) FROM orders WHERE discount > 'NaN'::DOUBLE;

-- name: prune_select_alias_shadows_column
SELECT qty + 100 AS qty FROM orders WHERE qty > 50;

-- name: prune_left_join_using
SELECT count(*) FROM orders o LEFT JOIN analytics.profiles p USING (customer_id) WHERE customer_id = 5;

-- name: prune_right_join_using
SELECT count(*) FROM orders o RIGHT JOIN analytics.profiles p USING (customer_id) WHERE customer_id < 50;

-- name: prune_full_join_using
SELECT count(*) FROM orders o FULL JOIN analytics.profiles p USING (customer_id) WHERE customer_id < 50;

-- name: prune_lateral_alias
SELECT count(*) FROM orders o, LATERAL (SELECT o.qty AS id) l WHERE l.id > 50;

-- name: prune_unicode_bound
SELECT count(*) FROM customers WHERE name >= 'Ö';

-- name: prune_collate_nocase_constant
SELECT count(*) FROM orders WHERE status = 'paid' COLLATE NOCASE;

-- name: prune_collate_nocase_constant_2
SELECT count(*) FROM customers WHERE name = 'ALICE' COLLATE NOCASE;

-- name: prune_date_before_1950
SELECT count(*) FROM orders WHERE day < DATE '1950-01-01';

-- name: prune_time_vs_string
SELECT count(*) FROM events WHERE t > '23:00:00';

-- name: prune_blob_bound
SELECT count(*) FROM events WHERE payload < '\x10'::BLOB;

-- name: prune_bool_vs_int
SELECT count(*) FROM orders WHERE flag = 1;

-- name: prune_bool_greater
SELECT count(*) FROM orders WHERE flag > false;

-- name: prune_int_vs_decimal_eq
SELECT count(*) FROM orders WHERE qty = 2.0;

-- name: prune_smallint_beyond_range
SELECT count(*) FROM events WHERE seq > 32767.5;

-- name: prune_tinyint_vs_decimal_eq
SELECT count(*) FROM events WHERE small = 127.0;

-- name: prune_decimal_scale_1_vs_2
SELECT count(*) FROM customers WHERE score > 99.95;

-- name: prune_decimal_equal
SELECT count(*) FROM customers WHERE score = 5.10;

-- name: prune_wide_decimal_vs_double
SELECT count(*) FROM customers WHERE credit > 1e23;

-- name: prune_timestamptz_vs_offset_string
SELECT count(*) FROM orders WHERE created < '1970-01-01 00:00:00+05';

-- name: prune_cast_column
SELECT count(*) FROM orders WHERE created::DATE = DATE '2025-03-15';

-- name: prune_between_reversed
SELECT count(*) FROM orders WHERE id BETWEEN 4000 AND 10;

-- name: prune_in_and_range
SELECT count(*) FROM orders WHERE id IN (1, 2, 3) AND id < 2;

-- name: prune_added_column_is_null
SELECT count(*) FROM evolving WHERE b IS NULL AND id > 100;

-- name: prune_added_column_range
SELECT count(*) FROM evolving WHERE b < 1000;

-- name: prune_timestamp_vs_timestamptz
SELECT count(*) FROM events WHERE ts > TIMESTAMPTZ '2024-06-01 00:00:00+02';

-- name: prune_timestamp_vs_timestamp_ms
SELECT count(*) FROM events WHERE ts > TIMESTAMP_MS '2024-06-01 00:00:00.001';

-- name: prune_timestamp_vs_timestamp_ns
SELECT count(*) FROM events WHERE ts = TIMESTAMP_NS '2024-06-01 00:00:00.0000005';

-- ============================================================ result shapes
-- name: result_duplicate_column_names
SELECT o.id, o.id, o.status, c.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id < 100;

-- name: result_wide
SELECT *, * FROM orders WHERE id < 50;

-- name: result_unicode_alias
SELECT id AS "ünïcode ✓", status AS "with space", qty AS "Select" FROM orders WHERE id < 10;

-- name: result_all_events_ordered
-- ordered
SELECT * FROM events ORDER BY id;

-- name: result_limit_stops_scan
SELECT count(*) AS n FROM (SELECT * FROM events LIMIT 100);

-- name: result_limit_zero
-- empty
SELECT * FROM events LIMIT 0;

-- name: result_nested_struct_list
SELECT customer_id, list(attrs ORDER BY id) AS attrs, list(prefs ORDER BY id) AS prefs FROM analytics.profiles WHERE customer_id < 100 GROUP BY customer_id;

-- name: result_exists_short_circuit
SELECT EXISTS (SELECT 1 FROM events WHERE value > 0) AS e, EXISTS (SELECT 1 FROM events WHERE id < 0) AS none;

-- ============================================================ more parameters
-- name: param_out_of_order
-- args: 'paid', 30
SELECT id FROM orders WHERE qty > $2 AND status = $1;

-- name: param_string_to_timestamptz
-- args: '2025-12-15 00:00:00+00'
SELECT id FROM orders WHERE created > ?;

-- name: param_time_to_timestamp
-- args: ts'2024-12-25T12:00:00Z'
SELECT id, ts FROM events WHERE ts >= ?;

-- name: param_int_for_double
-- args: 0, 250
SELECT id, value FROM events WHERE value < $1 AND value > -$2 - $1;

-- name: param_double_for_integer
-- args: 49.5
SELECT id, qty FROM orders WHERE qty > ?;

-- name: param_unicode_string
-- args: '山田太郎'
SELECT id, name FROM customers WHERE name = $1 OR name LIKE $1 || ' %';

-- ============================================================ errors: both sides fail
-- name: err_unknown_table
-- error
SELECT * FROM no_such_table;

-- name: err_unknown_column
-- error
SELECT no_such_column FROM orders;

-- name: err_syntax
-- error
SELEC id FROM orders;

-- name: err_conversion
-- error
SELECT status::INTEGER FROM orders WHERE status = 'paid';

-- ============================================================ known bugs
-- name: edge_lists_fixed_width
SELECT id, ints, dbls, flags FROM edge_lists;

-- name: edge_lists_count_only
SELECT count(ints) AS ints, count(flags) AS flags FROM edge_lists;

-- name: edge_lists_map
SELECT id, m FROM edge_lists;
