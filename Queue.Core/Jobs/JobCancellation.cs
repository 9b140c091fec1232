using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>The items a cancel takes back, shared by the customer's DELETE, the Admin's cancel and a release after a cancel.</summary>
internal static class JobCancellation
{
    /// <summary>Cancels the job's ready items (and expired leases) and counts them on the job; returns how many.</summary>
    public static async Task<int> CancelReadyItemsAsync(MySqlConnection conn, MySqlTransaction tx, long jobId, DateTime now, CancellationToken ct)
    {
        var n = await conn.ExecuteAsync(new CommandDefinition(JobSql.CancelReadyItems, new { JobId = jobId, Now = now }, tx, cancellationToken: ct));
        if (n > 0)
        {
            await conn.ExecuteAsync(new CommandDefinition(JobSql.AddCancelled, new { JobId = jobId, Count = n, Now = now }, tx, cancellationToken: ct));
        }
        return n;
    }
}
