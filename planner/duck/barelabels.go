package duck

import "strings"

// bareLabels are the keywords that DuckDB 2.0 accepts as a column alias
// without AS (SELECT 1 share) and the embedded DuckDB 1.5 does not: 1.5
// takes 15 keywords there, 2.0 360. Measured by running SELECT 1 <kw>
// for every keyword of duckdb_keywords() in both (DuckDB 2.0.1 of
// tests/requirements.txt, the engine's 1.5.6); regenerate the same way when
// the engine's DuckDB changes. repair.go uses them.
var bareLabels = func() map[string]bool {
	m := make(map[string]bool)
	for _, k := range strings.Fields(`
		abort absolute access action add admin after aggregate also alter always assertion assignment
		attach attribute backward before begin between bigint bit boolean cache call called cascade
		cascaded catalog chain char character characteristics checkpoint class close cluster coalesce
		columns comment comments commit committed compression configuration conflict connection
		constraints content continue conversion copy cost csv cube current cursor cycle data database
		deallocate dec decimal declare defaults deferred definer delete delimiter delimiters depends
		detach dictionary disable discard document domain double drop each enable encoding encrypted
		enum error event excluding exclusive execute exists explain export extension extensions external
		extract family first float following force forward function functions generated global grant
		granted grouping grouping_id groups handler header hold identity if immediate immutable implicit
		import include including increment index indexes inherit inherits inline inout input insensitive
		insert install instead int integer interval invoker isolation json key label language large last
		leakproof level listen load local location lock locked logged macro map mapping match matched
		materialized maxvalue merge method minvalue mode move name names national nchar new next no none
		nothing notify nowait nullif nulls numeric object of off oids old operator option options
		ordinality others out overlay overriding owned owner parallel parser partial partition
		partitioned passing password percent persistent plans policy position pragma preceding prepare
		prepared preserve prior privileges procedural procedure program publication quote range read
		real reassign recheck recursive ref referencing refresh reindex relative release repeatable
		replica reset restart restrict returns revoke role rollback rollup row rows rule sample
		savepoint schema schemas scope scroll search secret security sequence sequences serializable
		server session set setof sets share simple skip smallint snapshot sorted source sql stable
		standalone start statement statistics stdin stdout storage stored strict strip struct
		subscription substring sysid system tables tablespace target temp template temporary text ties
		time timestamp transaction transform treat trigger trim truncate trusted try_cast type types
		unbounded uncommitted unencrypted unknown unlisten unlogged until update use user vacuum valid
		validate validator value values varchar variable version view views virtual volatile whitespace
		work wrapper write xml xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces
		xmlparse xmlpi xmlroot xmlserialize xmltable yes zone
	`) {
		m[k] = true
	}
	return m
}()
