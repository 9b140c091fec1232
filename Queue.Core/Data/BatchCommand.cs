using MySqlConnector;

namespace Queue.Core.Data;

/// <summary>One statement of a <see cref="MySqlBatch"/> with its parameters (batch commands take no Dapper parameter objects).</summary>
internal static class BatchCommand
{
    public static MySqlBatchCommand Of(string sql, params (string Name, object Value)[] parameters)
    {
        var c = new MySqlBatchCommand(sql);
        foreach (var (name, value) in parameters)
        {
            c.Parameters.AddWithValue(name, value);
        }
        return c;
    }

    /// <summary>
    /// A multi-row statement (<see cref="Sql.SqlRows"/>) over <paramref name="rows"/>: each column's value of row k as its
    /// prefix and k (<see cref="AddNumbered"/>), and the time every row shares as <c>@Now</c>.
    /// </summary>
    public static MySqlBatchCommand Rows<T>(string sql, IReadOnlyList<T> rows, DateTime now, params (string Prefix, Func<T, object?> Value)[] columns)
    {
        var c = new MySqlBatchCommand(sql);
        foreach (var (prefix, value) in columns)
        {
            c.Parameters.AddNumbered(prefix, rows.Select(value));
        }
        c.Parameters.AddWithValue("@Now", now);
        return c;
    }

    /// <summary>
    /// Row k's value of a multi-row statement (<see cref="Sql.SqlRows"/>) as <paramref name="prefix"/>k: <c>@d0</c>,
    /// <c>@d1</c>, ... for <c>@d</c>.
    /// </summary>
    public static void AddNumbered<T>(this MySqlParameterCollection parameters, string prefix, IEnumerable<T> values)
    {
        var k = 0;
        foreach (var v in values)
        {
            parameters.AddWithValue(Sql.SqlRows.Parameter(prefix, k++), (object?)v ?? DBNull.Value);
        }
    }
}
