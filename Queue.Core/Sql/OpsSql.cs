namespace Queue.Core.Sql;

/// <summary>Operational queries: readiness and metrics.</summary>
public static class OpsSql
{
    public const string CountAppliedMigrations = "SELECT COUNT(*) FROM changelog WHERE type = 0 AND success = 1";

    public const string Ping = "SELECT 1";

    /// <summary>Migrations of one database, one process at a time (1 taken, 0 timed out); other databases on the server are not held up.</summary>
    public const string TakeMigrationLock = "SELECT GET_LOCK(CONCAT('queue_migrations_', MD5(DATABASE())), @Seconds)";

    public const string ReleaseMigrationLock = "SELECT RELEASE_LOCK(CONCAT('queue_migrations_', MD5(DATABASE())))";

    /// <summary>Ends a session whose COMMIT got no answer, so that it cannot commit after its outcome was read (CommitCheck).</summary>
    public const string KillSession = "KILL CONNECTION @Thread";

    public const string CountRewrites = "SELECT COUNT(*) FROM rewrite_log";
}
