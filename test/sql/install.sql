-- The extension installs cleanly, into its own schema, with its catalog.
-- (test/sql/uninstall.sql drops it again at the end.)
CREATE EXTENSION autocdc;
SELECT extname, extversion FROM pg_extension WHERE extname = 'autocdc';
-- Schema autocdc belongs to the extension.
SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
 WHERE refobjid = (SELECT oid FROM pg_extension WHERE extname = 'autocdc')
   AND classid = 'pg_namespace'::regclass;
SELECT c.relname, c.relkind
  FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.deptype = 'e'
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'autocdc')
 ORDER BY 1;
SELECT p.oid::regprocedure AS function, p.prosecdef AS security_definer
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'autocdc')
 ORDER BY p.oid::regprocedure::text;
SELECT name, setting, unit FROM pg_settings WHERE name LIKE 'autocdc.%' ORDER BY 1;
-- The catalog goes into pg_dump output with the extension.
SELECT c::regclass AS dumped FROM pg_extension, unnest(extconfig) AS c WHERE extname = 'autocdc' ORDER BY c::regclass::text;
-- autocdc.settings lists the same, with what each setting means.
SELECT s.name, s.context, length(s.description) > 20 AS described
  FROM autocdc.settings s ORDER BY 1;
