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
}
