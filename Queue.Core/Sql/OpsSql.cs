namespace Queue.Core.Sql;

/// <summary>Operational queries: readiness and metrics.</summary>
public static class OpsSql
{
    public const string CountAppliedMigrations = "SELECT COUNT(*) FROM changelog WHERE type = 0 AND success = 1";

    public const string Ping = "SELECT 1";

    /// <summary>Ends a session whose COMMIT got no answer, so that it cannot commit after its outcome was read (CommitCheck).</summary>
    public const string KillSession = "KILL CONNECTION @Thread";

    public const string CountRewrites = "SELECT COUNT(*) FROM rewrite_log";
}
