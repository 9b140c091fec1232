using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>A statement over many lanes (<see cref="ClaimSql.LockLanes"/> and its kin): lane k in <c>@j</c>k and <c>@k</c>k.</summary>
internal static class LaneCommand
{
    /// <summary>
    /// Lanes per statement. MariaDB's range optimizer pays more than linearly for a long row-constructor list: about
    /// 0.1 ms more at 32 pairs, 300 ms at 500 (EXPLAIN alone, measured by hand), so longer lists go as several statements.
    /// </summary>
    public const int MaxLanes = 16;

    public static MySqlBatchCommand Batch(string sql, IReadOnlyCollection<(long JobId, string Task)> lanes)
    {
        var cmd = new MySqlBatchCommand(sql);
        AddLanes(cmd.Parameters, lanes);
        return cmd;
    }

    public static void AddLanes(MySqlParameterCollection parameters, IReadOnlyCollection<(long JobId, string Task)> lanes)
    {
        parameters.AddNumbered("@j", lanes.Select(l => l.JobId));
        parameters.AddNumbered("@k", lanes.Select(l => l.Task));
    }
}
