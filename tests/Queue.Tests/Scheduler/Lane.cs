using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

internal sealed record Lane(long JobId, string Task, long Value, string Mode);

/// <summary>Lane values in SQL, for tests that read the ordering table directly.</summary>
internal static class LaneValueSql
{
    /// <summary>A lane's value as shown, its band taken off (<see cref="OrderingBand.Shown"/> in SQL; 2^41 and 2^42).</summary>
    public const string Shown = "(value - ((value + 2199023255552) DIV 4398046511104) * 4398046511104)";

    /// <summary>The current band's first stored value (<see cref="OrderingBand.Base"/>), for lanes a test inserts itself.</summary>
    public const string BandBase = "((SELECT band FROM ordering_band WHERE id = 1) * 4398046511104)";
}
