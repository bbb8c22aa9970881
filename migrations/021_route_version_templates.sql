-- A route's kept version records which version of its template it stood
-- on and the values applied then, so that restoring a version from before
-- an upgrade puts the route back on the template version it was made
-- from. Versions kept before this know only the route's template version
-- of today.

ALTER TABLE route_versions ADD COLUMN template_version bigint, ADD COLUMN template_values jsonb;

UPDATE route_versions v SET template_version = r.template_version, template_values = r.template_values
    FROM routes r WHERE r.project_id = v.project_id AND r.route_id = v.route_id;
