using System.Globalization;
using System.Text;
using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Local;

namespace Queue.Tests.Infrastructure;

/// <summary>
/// One database of the shared server with the real migrations applied, and what it takes to make another like it:
/// its tables as <c>SHOW CREATE TABLE</c> gives them and its rows (the changelog and the migrations' own inserts).
/// Migrating every class's database from the files ran some 70 DDL statements each, 20 of them index builds, on a
/// server every class shares; a copy is 39 CREATE TABLE statements and a few inserts in one round trip.
/// <c>MigrationTests</c> and <c>TemplateTests</c> keep the migrations themselves, and the copy, honest.
/// </summary>
internal sealed class MigratedTemplate
{
    private static readonly Lazy<Task<MigratedTemplate>> Shared = new(CreateAsync);

    private readonly string script;

    private MigratedTemplate(string database, string script)
    {
        Database = database;
        this.script = script;
    }

    public string Database { get; }

    public static Task<MigratedTemplate> GetAsync() => Shared.Value;

    /// <summary>Makes the tables and rows of the template in <paramref name="connectionString"/>'s database, which must be empty.</summary>
    public async Task CopyIntoAsync(string connectionString)
    {
        await using var conn = new MySqlConnection(connectionString);
        await conn.OpenAsync();
        await conn.ExecuteAsync(script);
    }

    private static async Task<MigratedTemplate> CreateAsync()
    {
        var server = await SharedMariaDb.GetAsync();
        const string Name = "t_migrated_template";
        var cs = await server.CreateDatabaseAsync(Name);
        await Migrations.ApplyAsync(cs, NullLogger.Instance);
        await using var conn = new MySqlConnection(cs);
        await conn.OpenAsync();
        var tables = (await conn.QueryAsync<string>(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = @Name AND table_type = 'BASE TABLE' ORDER BY table_name",
            new { Name })).ToList();
        // Tables refer to each other; the checks are off while they are made, then on for whoever uses the session next.
        var script = new StringBuilder("SET foreign_key_checks = 0;\n");
        foreach (var table in tables)
        {
            var create = await conn.QuerySingleAsync<(string Table, string Create)>($"SHOW CREATE TABLE `{table}`");
            script.Append(create.Create).Append(";\n");
        }
        foreach (var table in tables)
        {
            if (await conn.ExecuteScalarAsync<long>($"SELECT COUNT(*) FROM `{table}`") > 0)
            {
                script.Append(CultureInfo.InvariantCulture, $"INSERT INTO `{table}` SELECT * FROM `{Name}`.`{table}`;\n");
            }
        }
        // Evolve wrote down the schema it found empty by name: the copy's own, as if its migrations had run there.
        script.Append(CultureInfo.InvariantCulture,
            $"UPDATE `{Migrations.MetadataTable}` SET name = REPLACE(name, '{Name}', DATABASE()), description = REPLACE(description, '{Name}', DATABASE());\n");
        script.Append("SET foreign_key_checks = 1;\n");
        return new MigratedTemplate(Name, script.ToString());
    }
}
