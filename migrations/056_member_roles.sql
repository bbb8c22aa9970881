-- Roles per project (docs/roles.md): each membership has its own role, and
-- a member's effective role in a project is the lower of it and the
-- user's. Existing memberships take their user's role (a ROOT user's, which
-- the membership cannot raise or lower, reads ADMIN), so nobody's rights
-- change on upgrade.
ALTER TABLE project_members ADD COLUMN role text;

UPDATE project_members m SET role = CASE u.role WHEN 'ROOT' THEN 'ADMIN' ELSE u.role END
FROM users u WHERE u.id = m.user_id;

ALTER TABLE project_members ALTER COLUMN role SET NOT NULL,
    ADD CONSTRAINT project_members_role_check CHECK (role IN ('ADMIN', 'AUTHOR', 'VIEWER'));
