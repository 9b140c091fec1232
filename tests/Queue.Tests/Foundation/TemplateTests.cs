using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

/// <summary>The test classes' databases are copies of one migrated database: a copy must be what the migrations make.</summary>
public sealed class TemplateTests
{
    [Fact]
    public async Task A_copy_of_the_template_has_the_tables_indexes_keys_and_rows_the_migrations_make()
    {
        var server = await SharedMariaDb.GetAsync();
        var migrated = await server.CreateDatabaseAsync("t_tpl_m_" + Guid.NewGuid().ToString("N")[..10]);
        var copied = await server.CreateDatabaseAsync("t_tpl_c_" + Guid.NewGuid().ToString("N")[..10]);
        try
        {
            await Migrations.ApplyAsync(migrated, NullLogger.Instance);
            await (await MigratedTemplate.GetAsync()).CopyIntoAsync(copied);

            var (migratedTables, copiedTables) = (await TablesAsync(migrated), await TablesAsync(copied));
            Assert.NotEmpty(migratedTables);
            Assert.Equal(migratedTables.Keys, copiedTables.Keys);
            foreach (var (table, create) in migratedTables)
            {
                Assert.Equal(create, copiedTables[table]);
                Assert.Equal(await RowsAsync(migrated, table), await RowsAsync(copied, table));
            }
        }
        finally
        {
            await using var conn = new MySqlConnection(server.ServerConnectionString);
            await conn.ExecuteAsync($"DROP DATABASE IF EXISTS `{new MySqlConnectionStringBuilder(migrated).Database}`; DROP DATABASE IF EXISTS `{new MySqlConnectionStringBuilder(copied).Database}`");
        }
    }

    /// <summary>Each table's SHOW CREATE TABLE, without its next AUTO_INCREMENT value (the rows are compared apart).</summary>
    private static async Task<SortedDictionary<string, string>> TablesAsync(string cs)
    {
        await using var conn = new MySqlConnection(cs);
        var tables = new SortedDictionary<string, string>(StringComparer.Ordinal);
        foreach (var table in await conn.QueryAsync<string>("SHOW FULL TABLES"))
        {
            var create = await conn.QuerySingleAsync<(string Table, string Create)>($"SHOW CREATE TABLE `{table}`");
            tables[table] = System.Text.RegularExpressions.Regex.Replace(create.Create, @" AUTO_INCREMENT=\d+", "");
        }
        return tables;
    }

    /// <summary>
    /// A table's rows as text, in key order, the database's own name (in the changelog) as <c>&lt;db&gt;</c>; the changelog
    /// without when, by whom and how fast each migration was applied.
    /// </summary>
    private static async Task<string> RowsAsync(string cs, string table)
    {
        await using var conn = new MySqlConnection(cs);
        var sql = table == Migrations.MetadataTable
            ? $"SELECT id, type, version, description, name, checksum, success FROM `{table}` ORDER BY id"
            : $"SELECT * FROM `{table}` ORDER BY 1";
        var rows = await conn.QueryAsync(sql);
        var text = string.Join('\n', rows.Select(r => string.Join('|', ((IDictionary<string, object?>)r).Select(kv => $"{kv.Key}={kv.Value}"))))
            .Replace(new MySqlConnectionStringBuilder(cs).Database, "<db>", StringComparison.Ordinal);
        return System.Text.RegularExpressions.Regex.Replace(text, @" \(\d+ ms\)", "");
    }
}
