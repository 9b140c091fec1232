using Dapper;
using Microsoft.Extensions.Logging;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>Deletes idempotency records past their <c>expires_at</c>, a few thousand per statement.</summary>
public sealed partial class IdempotencyCleanup(MySqlDataSource db, TimeProvider clock, ILogger<IdempotencyCleanup> logger)
{
    private const int Batch = 2000;

    public async Task<long> RunAsync(CancellationToken ct)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        long total = 0;
        while (true)
        {
            await using var conn = await db.OpenConnectionAsync(ct);
            var n = await conn.ExecuteAsync(new CommandDefinition(MaintenanceSql.DeleteExpiredIdempotency, new { Now = now, Limit = Batch }, cancellationToken: ct));
            total += n;
            if (n < Batch)
            {
                break;
            }
        }
        if (total > 0)
        {
            Cleaned(logger, total);
        }
        return total;
    }

    [LoggerMessage(EventId = 6002, Level = LogLevel.Information, Message = "Idempotency cleanup deleted {Count} expired records")]
    private static partial void Cleaned(ILogger logger, long count);
}
