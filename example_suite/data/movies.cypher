// A small film graph written for pytest-queryeval's Cypher kind (MIT, this project).
// Eight people, five films, who acted in and directed what. Run once into a
// read-only ladybug database by the `ladybug` datasource type.
CREATE NODE TABLE Person(name STRING, born INT64, PRIMARY KEY(name));
CREATE NODE TABLE Movie(title STRING, released INT64, rating DOUBLE, PRIMARY KEY(title));
CREATE REL TABLE ACTED_IN(FROM Person TO Movie, role STRING);
CREATE REL TABLE DIRECTED(FROM Person TO Movie);

CREATE (:Person {name: 'Keanu Reeves', born: 1964});
CREATE (:Person {name: 'Carrie-Anne Moss', born: 1967});
CREATE (:Person {name: 'Laurence Fishburne', born: 1961});
CREATE (:Person {name: 'Lana Wachowski', born: 1965});
CREATE (:Person {name: 'Tom Hanks', born: 1956});
CREATE (:Person {name: 'Meg Ryan', born: 1961});
CREATE (:Person {name: 'Nora Ephron', born: 1941});
CREATE (:Person {name: 'Robert Zemeckis', born: 1951});

CREATE (:Movie {title: 'The Matrix', released: 1999, rating: 8.7});
CREATE (:Movie {title: 'The Matrix Reloaded', released: 2003, rating: 7.2});
CREATE (:Movie {title: 'Sleepless in Seattle', released: 1993, rating: 6.8});
CREATE (:Movie {title: "You've Got Mail", released: 1998, rating: 6.7});
CREATE (:Movie {title: 'Cast Away', released: 2000, rating: 7.8});

MATCH (p:Person {name: 'Keanu Reeves'}), (m:Movie {title: 'The Matrix'}) CREATE (p)-[:ACTED_IN {role: 'Neo'}]->(m);
MATCH (p:Person {name: 'Keanu Reeves'}), (m:Movie {title: 'The Matrix Reloaded'}) CREATE (p)-[:ACTED_IN {role: 'Neo'}]->(m);
MATCH (p:Person {name: 'Carrie-Anne Moss'}), (m:Movie {title: 'The Matrix'}) CREATE (p)-[:ACTED_IN {role: 'Trinity'}]->(m);
MATCH (p:Person {name: 'Carrie-Anne Moss'}), (m:Movie {title: 'The Matrix Reloaded'}) CREATE (p)-[:ACTED_IN {role: 'Trinity'}]->(m);
MATCH (p:Person {name: 'Laurence Fishburne'}), (m:Movie {title: 'The Matrix'}) CREATE (p)-[:ACTED_IN {role: 'Morpheus'}]->(m);
MATCH (p:Person {name: 'Tom Hanks'}), (m:Movie {title: 'Sleepless in Seattle'}) CREATE (p)-[:ACTED_IN {role: 'Sam Baldwin'}]->(m);
MATCH (p:Person {name: 'Tom Hanks'}), (m:Movie {title: "You've Got Mail"}) CREATE (p)-[:ACTED_IN {role: 'Joe Fox'}]->(m);
MATCH (p:Person {name: 'Tom Hanks'}), (m:Movie {title: 'Cast Away'}) CREATE (p)-[:ACTED_IN {role: 'Chuck Noland'}]->(m);
MATCH (p:Person {name: 'Meg Ryan'}), (m:Movie {title: 'Sleepless in Seattle'}) CREATE (p)-[:ACTED_IN {role: 'Annie Reed'}]->(m);
MATCH (p:Person {name: 'Meg Ryan'}), (m:Movie {title: "You've Got Mail"}) CREATE (p)-[:ACTED_IN {role: 'Kathleen Kelly'}]->(m);
MATCH (p:Person {name: 'Lana Wachowski'}), (m:Movie {title: 'The Matrix'}) CREATE (p)-[:DIRECTED]->(m);
MATCH (p:Person {name: 'Lana Wachowski'}), (m:Movie {title: 'The Matrix Reloaded'}) CREATE (p)-[:DIRECTED]->(m);
MATCH (p:Person {name: 'Nora Ephron'}), (m:Movie {title: 'Sleepless in Seattle'}) CREATE (p)-[:DIRECTED]->(m);
MATCH (p:Person {name: 'Nora Ephron'}), (m:Movie {title: "You've Got Mail"}) CREATE (p)-[:DIRECTED]->(m);
MATCH (p:Person {name: 'Robert Zemeckis'}), (m:Movie {title: 'Cast Away'}) CREATE (p)-[:DIRECTED]->(m);
