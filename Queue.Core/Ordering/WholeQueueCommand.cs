using Dapper;
using MySqlConnector;

namespace Queue.Core.Ordering;

/// <summary>
/// A rewrite statement that reads or writes every lane or job in one go (docs/DESIGN.md "Statements over the whole
/// queue"): the swap's copy and its count, the in-place rewrite's fill. Its run grows with the queue (the in-place
/// fill took 6.5 s alone at 1M jobs and about three times that under claims), so the driver's command timeout (30 s by
/// default, enforced by KILL QUERY) would fail it, and every later try of the period, past a few million jobs: the
/// queue would keep the last period's order for good. These run without it. What still ends them: a cancelled token
/// (the same KILL QUERY; none of them commits after one), and the server's own lock waits (`lock_wait_timeout`,
/// `innodb_lock_wait_timeout`), each of which ends in an error that rolls the statement back.
/// </summary>
internal static class WholeQueueCommand
{
    public static CommandDefinition Of(string sql, object? args, MySqlTransaction? tx, CancellationToken ct) =>
        new(sql, args, tx, commandTimeout: 0, cancellationToken: ct);
}
