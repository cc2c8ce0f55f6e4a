/* autocdc--0.1.0--0.2.0.sql: from 0.1.0 to 0.2.0 (unreleased: edited until 0.2.0 ships) */

\echo Use "ALTER EXTENSION autocdc UPDATE TO '0.2.0'" to load this file. \quit
